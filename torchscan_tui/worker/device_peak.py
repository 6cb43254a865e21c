"""The device allocator's peak over the window, beside the process's peak RSS (torch side).

On a CUDA device the caching allocator keeps its own high-water mark: reset as the window
opens, read as it ends, it is the window's peak of memory held by tensors on the device
(``torch.cuda.max_memory_allocated``) and of what the allocator reserved from the driver
(``max_memory_reserved``). Elsewhere there is no such figure: None, with why.
"""

from __future__ import annotations

from typing import Any

from torchscan_tui.formats.report_schema import DevicePeakFigures


class DevicePeak:
    """Resets and reads the device allocator's peak; does nothing off CUDA."""

    def __init__(self, device: str, cuda: Any = None) -> None:
        if cuda is None and device == "cuda":
            import torch

            cuda = torch.cuda
        self.cuda = cuda if cuda is not None and cuda.is_available() else None
        self.device = device
        self.allocated: int | None = None
        self.reserved: int | None = None
        self.problem: str | None = None  # the allocator's statistics failed: why

    def window_opens(self) -> None:
        if self.cuda is not None:
            try:
                self.cuda.synchronize()
                self.cuda.reset_peak_memory_stats()
            except (RuntimeError, AssertionError, AttributeError) as exc:
                self._failed(exc)

    def window_ends(self) -> None:
        if self.cuda is not None and self.allocated is None:
            try:
                self.cuda.synchronize()
                self.allocated = int(self.cuda.max_memory_allocated())
                self.reserved = int(self.cuda.max_memory_reserved())
            except (RuntimeError, AssertionError, AttributeError) as exc:
                self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        """No figure, and why: never a made-up one, never the profile's failure."""
        self.cuda = None
        self.problem = f"the device allocator's statistics failed: {exc}".splitlines()[0]

    def figures(self) -> DevicePeakFigures:
        if self.problem is not None:
            return {"allocated_bytes": None, "reserved_bytes": None, "missing": self.problem}
        if self.cuda is None:
            why = ("a CPU run: no device allocator" if self.device != "cuda" else
                   "CUDA is not available to torch here")  # fmt: skip
            return {"allocated_bytes": None, "reserved_bytes": None, "missing": why}
        return {
            "allocated_bytes": self.allocated,
            "reserved_bytes": self.reserved,
            "source": "torch.cuda.max_memory_allocated / max_memory_reserved over the window",
        }
