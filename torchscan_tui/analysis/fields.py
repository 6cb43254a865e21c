"""An operator row's fields, declared once: key, titles, unit, sort, export, rank view.

Every place that shows, sorts, exports or merges a row's fields reads this table: the
sort keys and their labels (:mod:`.sorting`), the exported columns
(:mod:`torchscan_tui.formats.export`), the text summary, the operator table's titles and
cells, the detail pane's labels, and how the cross-rank view combines a figure over the
ranks (:func:`.ranks.cross_rank_rows`). A new figure on the rows is one line here (plus
where it is computed): it then sorts, exports and reaches the rank view as every other.
Pure: no torch, no textual.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from torchscan_tui.common.formatting import (
    MISSING,
    format_bytes,
    format_count,
    format_seconds,
    format_shapes,
    format_si,
)

Unit = Literal["text", "shapes", "kind", "count", "seconds", "bytes", "flops", "flop_rate", "sites"]
# How the cross-rank view makes one figure of every rank's: the median over every rank (a
# rank without the row counting 0, as it spent nothing there), rounded for counts; the
# median of the ranks that measured it (None where none did); or the first rank's value.
AcrossRanks = Literal["median", "median_measured", "first"]


@dataclass(frozen=True)
class RowField:
    """One field of an operator row and everything the program says or does with it."""

    key: str  # the row's key, and the exported column's name
    title: str  # in full: the detail pane's label
    short: str  # the table's column title, the sort's label, the text summary's heading
    unit: Unit
    sort: str | None = None  # the sort key that orders rows by it (``c``, ``d``, ...)
    export: bool = True  # a column of CSV and Markdown exports
    across_ranks: AcrossRanks = "first"

    def text(self, value: Any, signed: bool = False) -> str:
        """The value as the screen shows it (``signed``: bytes with their ``+``)."""
        if value is None:
            return MISSING
        if self.unit == "seconds":
            return format_seconds(value)
        if self.unit == "bytes":
            return format_bytes(value, signed=signed)
        if self.unit == "count":
            return format_count(value)
        if self.unit == "shapes":
            return format_shapes(value)
        if self.unit == "flops":
            return format_si(value, "FLOP")
        if self.unit == "flop_rate":
            return format_si(value, "FLOP/s")
        if self.unit == "sites":  # "train.py(46): <module> 80%; model.py(12): forward 20%"
            return "; ".join(
                site["site"] + ("" if site.get("share") is None else f" {site['share']:.0%}")
                for site in value
            )
        return str(value)


ROW_FIELDS: tuple[RowField, ...] = (
    RowField("operator", "operator", "operator", "text"),
    RowField("input_shapes", "input shapes", "input shapes", "shapes"),
    RowField("kind", "kind", "kind", "kind"),
    RowField("calls", "calls", "calls", "count", sort="calls", across_ranks="median"),
    RowField(
        "cpu_self_seconds", "CPU self time", "CPU self", "seconds", sort="cpu",
        across_ranks="median",
    ),
    RowField(
        "device_self_seconds", "device self time", "device self", "seconds", sort="device",
        across_ranks="median_measured",
    ),
    RowField(
        "cpu_net_bytes", "CPU net bytes", "net bytes", "bytes", sort="bytes",
        across_ranks="median",
    ),
    # Inclusive time (the op's children too) and FLOPs, as key_averages().table() shows.
    RowField(
        "cpu_total_seconds", "CPU total time", "CPU total", "seconds",
        sort="cpu_total", across_ranks="median",
    ),
    RowField(
        "device_total_seconds", "device total time", "dev total", "seconds",
        sort="device_total", across_ranks="median_measured",
    ),
    RowField(
        "flops", "FLOPs", "FLOPs", "flops", sort="flops",
        across_ranks="median_measured",
    ),
    RowField(
        "flops_per_second", "achieved FLOP/s", "FLOP/s", "flop_rate",
        sort="flop_rate", across_ranks="median_measured",
    ),
    RowField("sites", "called from", "called from", "sites"),  # analysis/sites.py
)  # fmt: skip
FIELDS: dict[str, RowField] = {field.key: field for field in ROW_FIELDS}
# The sort keys: the report's own order, then every sortable field's.
SORT_FIELDS: dict[str, str] = {
    "rank": "rank",
    **{field.sort: field.key for field in ROW_FIELDS if field.sort},
}
SORT_LABELS: dict[str, str] = {
    "rank": "rank",
    **{field.sort: field.short for field in ROW_FIELDS if field.sort},
}
EXPORT_COLUMNS: tuple[str, ...] = tuple(field.key for field in ROW_FIELDS if field.export)


def across_ranks(field: RowField, found: Mapping[int, Mapping[str, Any]], ranks: Sequence[int]):
    """``field``'s one figure for a row found on some of ``ranks`` (see :data:`AcrossRanks`)."""
    if field.across_ranks == "first":
        return next(iter(found.values())).get(field.key)
    if field.across_ranks == "median_measured":
        measured = [value for row in found.values() if (value := row.get(field.key)) is not None]
        return statistics.median(measured) if measured else None
    values = [found[rank].get(field.key) or 0 if rank in found else 0 for rank in ranks]
    middle = statistics.median(values)
    return round(middle) if field.unit in ("count", "bytes", "flops") else middle
