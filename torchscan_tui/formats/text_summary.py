"""A report's top rows as plain text: what opening a profile prints with no terminal.

``torchscan-tui trace.json | head`` or a CI log has no screen to draw the app on; it gets
the table ``key_averages().table()`` users know instead: the top rows in the report's
rank order, then its diagnostics (pure: no torch, no textual).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan_tui.analysis.device_summary import device_line
from torchscan_tui.analysis.fields import FIELDS
from torchscan_tui.analysis.memory_timeline import memory_lines
from torchscan_tui.analysis.overview import overview_lines
from torchscan_tui.analysis.ranks import straggler_lines
from torchscan_tui.analysis.records import Row
from torchscan_tui.analysis.shares import RANKED_BY_LABELS
from torchscan_tui.analysis.sites import by_line
from torchscan_tui.analysis.step_summary import peak_scope, step_line, unprofiled_line
from torchscan_tui.common.formatting import (
    describe_row,
    format_bytes,
    format_count,
    format_seconds,
)
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.formats.report_schema import Report

TOP_ROWS = 30
# The figures each line shows, in this order, and their widths (analysis/fields.py).
TEXT_FIGURES = (
    ("cpu_self_seconds", 12),
    ("device_self_seconds", 12),
    ("calls", 8),
    ("cpu_net_bytes", 10),
)


TOP_SOURCE_LINES = 5


def source_lines(rows: Sequence[Row]) -> list[str]:
    """The source lines with the most CPU self time (a profile with stacks: L in the
    app), none otherwise."""
    lines = by_line(rows)
    if not lines:
        return []
    said = ["source lines (CPU self time by the line of your code that led to it):"]
    for line in lines[:TOP_SOURCE_LINES]:
        operators = ", ".join(list(line["operators"])[:3])
        said.append(neutralise_controls(
            f"{format_seconds(line['cpu_self_seconds']):>12}  {line['site']}  ({operators})"
        ))  # fmt: skip
    return said


def report_text(report: Report, source: str, rows: Sequence[Row], limit: int = TOP_ROWS) -> str:
    """The header, the first ``limit`` of ``rows`` (the report's, in rank order) and the
    notes. ``rows`` may be only the first page of a report whose other rows are pending:
    the count comes from its context."""
    context = report.get("context") or {}
    total = context.get("total_grouped_operators") or len(rows)
    ranked = RANKED_BY_LABELS.get(context.get("ranked_by", ""), "self time")
    header = f"{source}: {format_count(total)} grouped operators, ranked by {ranked}"
    rss = (report.get("totals") or {}).get("process_peak_rss")
    if rss:
        header += f"; peak RSS {format_bytes(rss['value'])}{peak_scope(report.get('run'))}"
    device = device_line(context)
    if device:
        header += f"; {device}"
    steps = step_line(context)
    if steps:
        header += f"; {steps}"
    clean = unprofiled_line(report.get("run"), context)
    if clean:
        header += f"; {clean}"
    if context.get("ranks"):
        header += f"; {context['ranks']} ranks"
    lines = [neutralise_controls(header), *map(neutralise_controls, straggler_lines(context))]
    figures = [(FIELDS[key], width) for key, width in TEXT_FIGURES]
    lines.append(" ".join(f"{field.short:>{width}}" for field, width in figures)
                 + "  operator and shapes")  # fmt: skip
    for row in rows[:limit]:
        values: Mapping[str, Any] = row
        cells = " ".join(f"{field.text(values[field.key]):>{width}}" for field, width in figures)
        lines.append(f"{cells}  {describe_row(row)}")
    if total > limit:
        lines.append(f"... {format_count(total - limit)} more: open it in a terminal to see all")
    run = report.get("run") or {}
    if run.get("complete") is False:  # its rows undercount: say so before anything else
        lines.insert(1, neutralise_controls(f"incomplete: {run.get('note') or 'rows missing'}"))
    for line in overview_lines(report.get("overview") or {}):
        lines.append(neutralise_controls(line))
    lines += source_lines(report.get("operators") or rows)
    lines += map(neutralise_controls, memory_lines(report.get("memory")))
    for note in report.get("diagnostics") or []:
        lines.append(neutralise_controls(f"note: {note['code']}: {note['message']}"))
    return "\n".join(lines)
