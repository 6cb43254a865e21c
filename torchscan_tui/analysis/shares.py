"""Where the time goes, as bars: the figures behind the ``b`` chart (pure, no textual).

:func:`time_shares` sums one self-time field per operator name over the rows shown (all
input shapes of an operator together; self times of different operators do not overlap
within one measurement, so their sum is the operator's total self time) and returns the
top operators with their share of the total, plus one bar for everything else. Rows
whose figure was not measured are counted, never taken as zero.

:func:`delta_bars` picks the compare rows that moved most, faster or slower.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from torchscan_tui.common.formatting import format_shapes

TOP_BARS = 12
FIELD_LABELS = {"cpu_self_seconds": "CPU self time", "device_self_seconds": "device self time"}
# How a report's rows are ordered (``context.ranked_by``): a time field, or the ranks' spread.
RANKED_BY_LABELS = {**FIELD_LABELS, "rank_spread": "how much the ranks differ (CPU self time)"}


def chart_fields(keys: dict[str, str]) -> dict[str, tuple[str, str]]:
    """A chart's keys as the chart screen takes them: key -> (label, field)."""
    return {key: (FIELD_LABELS[name], name) for key, name in keys.items()}


@dataclass(frozen=True)
class Share:
    """One bar: an operator (or the rest) and its part of the total self time."""

    label: str
    seconds: float
    fraction: float
    rows: int  # how many (operator, shapes) rows it sums


@dataclass
class Shares:
    """The bars for one field over a set of rows."""

    field: str
    bars: list[Share] = dataclasses.field(default_factory=list)
    total_seconds: float | None = None  # None: no row has the figure
    rows: int = 0
    not_measured: int = 0  # rows whose figure is None


def time_shares(rows: Iterable[dict], field_name: str, top: int = TOP_BARS) -> Shares:
    """The top ``top`` operators by summed ``field_name``, and one "other" bar."""
    per_operator: dict[str, list] = {}
    result = Shares(field_name)
    for row in rows:
        result.rows += 1
        value = row.get(field_name)
        if value is None:
            result.not_measured += 1
            continue
        entry = per_operator.setdefault(row["operator"], [0.0, 0])
        entry[0] += value
        entry[1] += 1
    if not per_operator:
        return result
    total = sum(seconds for seconds, _ in per_operator.values())
    result.total_seconds = total
    ranked = sorted(per_operator.items(), key=lambda item: item[1][0], reverse=True)

    def share(label: str, seconds: float, count: int) -> Share:
        return Share(label, seconds, seconds / total if total > 0 else 0.0, count)

    result.bars = [share(name, seconds, count) for name, (seconds, count) in ranked[:top]]
    rest = ranked[top:]
    if rest:
        result.bars.append(
            share(
                f"other ({len(rest)} operators)",
                sum(seconds for _, (seconds, _) in rest),
                sum(count for _, (_, count) in rest),
            )
        )
    return result


@dataclass(frozen=True)
class DeltaBar:
    """One compare row that moved: label, before, after and after - before."""

    label: str
    before: float | None
    after: float | None
    delta: float
    presence: str


def delta_bars(rows: Iterable[dict], field_name: str, top: int = TOP_BARS) -> list[DeltaBar]:
    """The ``top`` compare rows with the largest |delta| of ``field_name``, largest first.

    Rows without a delta (the figure missing on a side) are left out: there is no bar to
    draw for a change that was not measured.
    """
    moved = []
    for row in rows:
        figures = row[field_name]
        if figures["delta"] is None or figures["delta"] == 0:
            continue
        label = f"{row['operator']} {format_shapes(row['input_shapes'])}".strip()
        moved.append(
            DeltaBar(label, figures["before"], figures["after"], figures["delta"], row["presence"])
        )
    moved.sort(key=lambda bar: abs(bar.delta), reverse=True)
    return moved[:top]
