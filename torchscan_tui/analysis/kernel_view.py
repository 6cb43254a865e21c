"""The kernel view's rows (the report's ``kernels`` block) in a :class:`~.row_view.RowView`:
the same filter language and sorts as the operator rows; pure.

A kernel row is one (kernel name, launching operator) with its calls and durations: see
:func:`torchscan_tui.analysis.device_summary.kernel_row`. A filter word matches the kernel's
name, its operator, its activity or its copy direction (``gemm``, ``htod``,
``aten::copy_ memcpy``, ``*convolution``); a kernel has no input shapes and no row kind,
so those terms are refused with why.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchscan_tui.analysis.filtering import FilterError, NameTerm, RowIndex, parse_filter
from torchscan_tui.analysis.records import KernelRow
from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.analysis.sorting import Sort, field_getters

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


class FieldsIndex(RowIndex):
    """An index whose rows are matched by several text fields, a word matching any of
    them (a wildcard pattern over each whole field): the kernel view's. No shapes, no
    kinds."""

    def __init__(self, fields: Sequence[str] = KERNEL_TEXT_FIELDS) -> None:
        super().__init__()
        self.fields = tuple(fields)
        self.texts: list[tuple[str, ...]] = []

    def empty_copy(self) -> FieldsIndex:
        return type(self)(self.fields)

    def index_some(self, limit: int | None = None) -> None:
        start = len(self.names)
        end = len(self._rows) if limit is None else min(len(self._rows), start + limit)
        for row in self._rows[start:end]:
            texts = tuple(str(value).casefold() for key in self.fields
                          if (value := row.get(key)))  # fmt: skip
            self.texts.append(texts)
            self.names.append(texts[0] if texts else "")
            self.kinds.append("")

    def matching(self, word: NameTerm, ids: Sequence[int]) -> list[int]:
        found = NameTerm(word.alternatives).matcher()  # any field; the negation after
        texts = self.texts
        return [i for i in ids if any(map(found, texts[i])) != word.negated]


def kernel_view(rows: Sequence[KernelRow]) -> RowView[KernelRow]:
    """The kernel rows in a view, longest total first."""
    return RowView(list(rows), index=FieldsIndex(), sort=Sort("total"),
                   sort_getters=field_getters(KERNEL_SORTS))  # fmt: skip


def set_kernel_filter(view: RowView[KernelRow], text: str) -> None:
    """Apply ``text`` to the kernel rows; FilterError (every row shown) for a malformed
    filter or for the shape and kind terms kernels do not have."""
    parsed = parse_filter(text)
    if parsed.shapes or parsed.kinds:
        view.set_filter("")
        raise FilterError("kernels have no input shapes or kinds: filter them by words")
    view.set_filter(text)


def filter_kernels(rows: Sequence[KernelRow], text: str) -> list[KernelRow]:
    """The kernel rows that ``text`` selects, in their order (see :func:`set_kernel_filter`)."""
    view = kernel_view(rows)
    view.set_sort(Sort())
    set_kernel_filter(view, text)
    return view.visible_rows()


def sort_kernels(rows: Sequence[KernelRow], key: str, descending: bool = True) -> list[KernelRow]:
    """Rows sorted by one of :data:`KERNEL_SORTS` (ties keep the report's order)."""
    view = kernel_view(rows)
    view.set_sort(Sort(key, descending))
    return view.visible_rows()
