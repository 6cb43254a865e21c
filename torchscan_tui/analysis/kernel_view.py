"""Filter and sort the kernel view's rows (the report's ``kernels`` block); pure.

A kernel row is one (kernel name, launching operator) with its calls and durations: see
:func:`torchscan_tui.analysis.device_summary.kernel_row`. The filter is words, all of which must
appear (case-insensitive) in the kernel's name, its operator, its activity or its copy
direction: ``gemm``, ``htod``, ``aten::copy_ memcpy``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan_tui.analysis.filtering import FilterError, NameTerm, parse_filter
from torchscan_tui.analysis.records import KernelRow

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


KERNEL_TEXT_FIELDS = ("kernel", "operator", "activity", "direction")


def filter_kernels(rows: Sequence[KernelRow], text: str) -> list[KernelRow]:
    """The kernel rows that ``text`` selects, in the rows' own filter language
    (:mod:`.filtering`: words, ``-word``, ``a|b``, ``*glob*``), a word matching the
    kernel's name, its operator, its activity or its direction (``htod``). A kernel has
    no input shapes and no row kind: those terms raise :class:`FilterError`, said in the
    view as the rows' filter says its own."""
    parsed = parse_filter(text)
    if parsed.shapes or parsed.kinds:
        raise FilterError("kernels have no input shapes or kinds: filter them by words")
    if not parsed.words:
        return list(rows)
    terms = [(NameTerm(word.alternatives).matcher(), word.negated) for word in parsed.words]

    def selected(row: KernelRow) -> bool:
        texts = [str(value).casefold() for key in KERNEL_TEXT_FIELDS
                 if (value := row.get(key))]  # fmt: skip
        return all(any(map(matches, texts)) != negated for matches, negated in terms)

    return [row for row in rows if selected(row)]


def sort_kernels(rows: Sequence[KernelRow], key: str, descending: bool = True) -> list[KernelRow]:
    """Rows sorted by one of :data:`KERNEL_SORTS` (ties keep the report's order)."""
    field = KERNEL_SORTS[key]
    if field == "kernel":
        return sorted(rows, key=lambda row: str(row["kernel"]), reverse=not descending)
    return sorted(rows, key=lambda row: _figure(row, field), reverse=descending)


def _figure(row: Mapping[str, Any], field: str) -> float:
    return row[field] or 0
