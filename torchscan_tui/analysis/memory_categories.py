"""Memory by category over one step, as torch's own memory profiler classifies it (pure).

``torch.profiler._memory_profiler`` (the code behind ``export_memory_timeline``) follows
each tensor through the profile's data flow and names what it is: a parameter, optimizer
state, an input, a temporary, an activation, a gradient, autograd's own detail, or
unknown. It needs shapes, memory and Python stacks (it finds the optimizer's state from
the Python tracer's optimizer calls). A live run takes them in the step after the window
(``worker/memory_categories.py``); this module turns its per-category timeline into the
figures the report and the memory screen show.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchscan_tui.analysis.records import CategoryMemory

MAX_POINTS = 200


def category_memory(
    device: str, categories: Sequence[str], times_us: Sequence[int], sizes: Sequence[Sequence[int]]
) -> CategoryMemory | None:
    """One device's figures from a timeline of ``times_us`` (microseconds) and each
    time's bytes by category (in ``categories``' order); None without a point."""
    if not times_us:
        return None
    totals = [sum(point) for point in sizes]
    peak = max(range(len(totals)), key=totals.__getitem__)
    start = times_us[0]
    keep = set(range(0, len(times_us), -(-len(times_us) // MAX_POINTS)))  # ceil: <= MAX
    keep |= {peak, len(times_us) - 1}
    return {
        "device": device,
        "categories": list(categories),
        "peak_bytes": totals[peak],
        "peak_seconds": (times_us[peak] - start) / 1e6,
        "at_peak": list(sizes[peak]),
        "largest": [max(point[index] for point in sizes) for index in range(len(categories))],
        "timeline": [[(times_us[i] - start) / 1e6, list(sizes[i])] for i in sorted(keep)],
    }
