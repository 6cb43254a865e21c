"""The traced step's memory by category, from torch's own memory profiler.

``MemoryProfile`` (``torch.profiler._memory_profiler``, private to torch and so read
defensively: any failure of it gives no categories and says why, never a failed run)
classifies each tensor of the profile; ``MemoryProfileTimeline`` sums them by category
over time for a device, as ``export_memory_timeline`` does.
"""

from __future__ import annotations

from typing import Any

from torchscan_tui.analysis.memory_categories import category_memory
from torchscan_tui.analysis.records import MemoryCategories
from torchscan_tui.common.text import exception_line

SOURCE = (
    "the step after the window, classified by torch's memory profiler "
    "(torch.profiler._memory_profiler, as export_memory_timeline)"
)
# torch's Category names as we show them; None is a tensor it could not classify.
NAMES = {
    "PARAMETER": "parameter",
    "OPTIMIZER_STATE": "optimizer state",
    "INPUT": "input",
    "TEMPORARY": "temporary",
    "ACTIVATION": "activation",
    "GRADIENT": "gradient",
    "AUTOGRAD_DETAIL": "autograd detail",
}


def memory_categories(kineto_results: Any) -> MemoryCategories:
    """Each device's memory by category over the profiled step, or why there is none."""
    try:
        from torch.profiler import _memory_profiler as torch_memory
    except ImportError:
        return {"missing": "this torch has no memory profiler (torch.profiler._memory_profiler)"}
    try:
        profile = torch_memory.MemoryProfile(kineto_results)
        timeline = torch_memory.MemoryProfileTimeline(profile)
        order = list(torch_memory._CATEGORY_TO_INDEX)  # the order of its sizes (after one)
        devices = sorted({str(key.device) for _, _, (key, _), _ in timeline.timeline})
        names = [NAMES.get(getattr(c, "name", ""), "unknown") for c in order]
        found = []
        for device in devices:
            times, sizes = timeline._coalesce_timeline(device)
            block = category_memory(device, names, times, [point[1:] for point in sizes])
            if block is not None:
                found.append(block)
    except Exception as exc:  # noqa: BLE001 - torch's private code: say why, never fail
        return {"missing": f"torch's memory profiler failed on this step ({exception_line(exc)})"}
    if not found:
        return {"missing": "the step after the window allocated nothing torch could follow"}
    return {"source": SOURCE, "devices": found}
