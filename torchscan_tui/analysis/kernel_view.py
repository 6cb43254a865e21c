"""Filter and sort the kernel view's rows (the report's ``kernels`` block); pure.

A kernel row is one (kernel name, launching operator) with its calls and durations: see
:func:`torchscan_tui.analysis.device_summary.kernel_row`. The filter is words, all of which must
appear (case-insensitive) in the kernel's name, its operator, its activity or its copy
direction: ``gemm``, ``htod``, ``aten::copy_ memcpy``.
"""

from __future__ import annotations

from collections.abc import Sequence

KERNEL_COLUMNS = (
    "kernel", "operator", "activity", "direction", "calls",
    "total_seconds", "mean_seconds", "min_seconds", "max_seconds",
)  # fmt: skip
KERNEL_SORTS = {
    "total": "total_seconds",
    "calls": "calls",
    "mean": "mean_seconds",
    "max": "max_seconds",
    "name": "kernel",
}


def _haystack(row: dict) -> str:
    parts = (row.get("kernel"), row.get("operator"), row.get("activity"), row.get("direction"))
    return " ".join(str(part) for part in parts if part).casefold()


def filter_kernels(rows: Sequence[dict], text: str) -> list[dict]:
    """The rows whose text holds every word of ``text`` (all rows for no words)."""
    words = text.casefold().split()
    if not words:
        return list(rows)
    return [row for row in rows if all(word in _haystack(row) for word in words)]


def sort_kernels(rows: Sequence[dict], key: str, descending: bool = True) -> list[dict]:
    """Rows sorted by one of :data:`KERNEL_SORTS` (ties keep the report's order)."""
    field = KERNEL_SORTS[key]
    if field == "kernel":
        return sorted(rows, key=lambda row: str(row["kernel"]), reverse=not descending)
    return sorted(rows, key=lambda row: row[field] or 0, reverse=descending)
