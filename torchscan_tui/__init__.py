"""torchscan-tui: whole-process peak RSS and operator hotspots of PyTorch workloads.

The public API is imported lazily so that ``import torchscan_tui`` alone never imports
torch (the UI process relies on that):

* :func:`measure_peak_rss` (``torchscan_tui.run.process``): the kernel's peak RSS of a command.
* :func:`profile_workload` (``torchscan_tui.worker.profiling``): one profiled call, ranked rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["measure_peak_rss", "profile_workload", "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from torchscan_tui.run.process import measure_peak_rss
    from torchscan_tui.worker.profiling import profile_workload


def __getattr__(name: str) -> Any:
    if name == "measure_peak_rss":
        from torchscan_tui.run.process import measure_peak_rss

        return measure_peak_rss
    if name == "profile_workload":
        from torchscan_tui.worker.profiling import profile_workload

        return profile_workload
    raise AttributeError(f"module 'torchscan_tui' has no attribute {name!r}")
