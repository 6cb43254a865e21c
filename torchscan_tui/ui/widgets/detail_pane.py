"""Everything about the highlighted row: fields, kind, callers and the diagnostics."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from rich.text import Text
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from torchscan_tui.analysis.fields import FIELDS
from torchscan_tui.analysis.records import Note
from torchscan_tui.analysis.sites import parse_site, split_stack
from torchscan_tui.analysis.step_summary import spread_text
from torchscan_tui.common.formatting import (
    format_count,
    format_seconds,
    format_shapes,
)
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.formats.report_schema import Context
from torchscan_tui.ui.literal import literal
from torchscan_tui.ui.palette import palette_of

KIND_LABELS: dict[str, str] = {  # by RowKind
    "operator": "operator (an ATen / torch op)",
    "runtime": "runtime event (CUDA runtime or driver call: launch, copy, sync)",
    "annotation": "caller annotation (a record_function range)",
    "memory": "memory events outside any operator",
    "unattributed": "device work no operator launched (its note says why)",
}


LABEL_WIDTH = 18


class _Fields:
    """Label/value lines as one Text (labels padded so values line up)."""

    def __init__(self):
        self.text = Text()

    def add_row(self, label: str, value: str | Text) -> None:
        if self.text:
            self.text.append("\n")
        self.text.append(label.ljust(LABEL_WIDTH), style="bold")
        self.text.append(value if isinstance(value, Text) else literal(value))


def _time_with_share(seconds: float | None, total: float | None, calls: int) -> str:
    """``1.234 ms  (12.3% of all rows; 41.1 µs per call)``: the figures behind the bars."""
    text = format_seconds(seconds)
    if seconds is None:
        return text
    parts = []
    if total:
        parts.append(f"{100 * seconds / total:.1f}% of all rows")
    if calls:
        parts.append(f"{format_seconds(seconds / calls)} per call")
    return f"{text}  ({'; '.join(parts)})" if parts else text


class Detail(NamedTuple):
    """What the pane shows: the highlighted row (None: none), the report's notes and its
    context (the sums a row's share is of)."""

    row: Mapping[str, Any] | None
    notes: Sequence[Note]
    context: Context
    library_frames: bool = False  # call sites with torch's frames unfolded (F)


class DetailPane(VerticalScroll):
    """Attributes down: the screen sets :attr:`detail` while the pane is shown."""

    detail: reactive[Detail | None] = reactive(None, always_update=True, init=False)

    def compose(self):
        yield Static(id="detail-body")

    def watch_detail(self, detail: Detail | None) -> None:
        if detail is not None:
            self._paint(*detail)

    def _paint(
        self,
        row: Mapping[str, Any] | None,
        report_diagnostics: Sequence[Note],
        context: Context,
        library_frames: bool = False,
    ) -> None:
        if row is None:
            self._show(Text("No row highlighted.", style="dim"))
            return
        warning = palette_of(self.app).warning
        table = _Fields()
        table.add_row(FIELDS["operator"].title, neutralise_controls(row["operator"]))
        if isinstance(row.get("rank"), int):  # a rank's own row, streamed while the job ran
            table.add_row("rank", f"{row['rank']} (its own row; the cross-rank view replaces "
                                  "these once every rank is done)")  # fmt: skip
        kind = str(row.get("kind"))
        table.add_row(FIELDS["kind"].title, KIND_LABELS.get(kind, kind))
        shapes = neutralise_controls(format_shapes(row["input_shapes"]))
        table.add_row(FIELDS["input_shapes"].title, shapes)
        table.add_row(FIELDS["calls"].title, format_count(row["calls"]))
        calls = row["calls"]
        table.add_row(
            FIELDS["cpu_self_seconds"].title,
            _time_with_share(row["cpu_self_seconds"], context.get("cpu_self_seconds_sum"), calls),
        )
        device = _time_with_share(
            row["device_self_seconds"], context.get("device_self_seconds_sum"), calls
        )
        if row["device_self_seconds"] is None:
            device += "  (not measured in this run)"
        table.add_row(FIELDS["device_self_seconds"].title, device)
        spread = spread_text(row)
        if spread:
            table.add_row("CPU self per step", spread)
        across = row.get("ranks")
        if isinstance(across, dict):  # a cross-rank row: every rank's figure
            per_rank = ", ".join(
                f"rank {rank} {format_seconds(seconds)}"
                for rank, seconds in (across.get("seconds") or {}).items()
            )
            # No rank is the slowest where all took the same (a tie named one of them),
            # nor where there is one (a node's share of a job across nodes).
            slowest = (
                "one rank" if len(across.get("seconds") or {}) == 1
                else "every rank the same" if not across["spread"]
                else f"slowest rank {across['slowest_rank']}"
            )  # fmt: skip
            table.add_row(
                "CPU self by rank",
                f"median {format_seconds(across['median'])}, spread "
                f"{format_seconds(across['spread'])}, {slowest} ({per_rank})",
            )
        _inclusive_figures(table, row, bool(context.get("flops_counted")))
        net = FIELDS["cpu_net_bytes"]
        table.add_row(net.title, net.text(row["cpu_net_bytes"], signed=True))
        callers = row.get("callers") or {}
        if callers:
            listed = ", ".join(f"{neutralise_controls(k)} ×{v}" for k, v in callers.items())
            table.add_row("called under", listed)
        _call_sites(table, row.get("sites") or [], library_frames)
        table.add_row("ranked by", str(context.get("ranked_by", "—")))
        notes = list(row.get("diagnostics") or [])
        codes = {note.get("code") for note in notes}
        notes += [note for note in report_diagnostics if note.get("code") not in codes]
        for note in notes:
            table.add_row("diagnostic", literal(f"{note['code']}: {note['message']}", warning))
        table.add_row(
            "note",
            Text(
                "Self times may overlap and are not latency; net bytes are allocations minus "
                "frees inside the op, not a peak.",
                style="dim",
            ),
        )
        self._show(table.text)

    def _show(self, text: Text) -> None:
        """Show ``text``, laying the pane out again only when its height changes: a move
        between rows whose details take as many lines is one repaint of the pane, where a
        layout cost two more frames (the pane and the table's scrollbar drawn again)."""
        body = self.query_one("#detail-body", Static)
        width, height = body.size  # a width of 0: not laid out yet
        body.update(text, layout=False)
        needed = body.get_content_height(body.container_size, self.app.size, width)
        if not width or needed != height:
            body.refresh(layout=True)


# Why a figure of a row is missing, where the row's other figures do not say it.
INCLUSIVE_MISSING = {
    "cpu_total_seconds": "not in this file",
    "device_total_seconds": "not measured in this run",
    "flops": "not counted: run with --flops (a trace carries none)",
    "flops_per_second": "no FLOPs counted",
}
FLOPS_NONE = "torch counts matmul, conv, add and mul only"


def _inclusive_figures(table: Any, row: Mapping[str, Any], flops_counted: bool) -> None:
    """Inclusive time and FLOPs, as ``key_averages().table()`` shows them, each missing
    one with why."""
    for key, why in INCLUSIVE_MISSING.items():
        if key == "flops" and flops_counted:
            why = FLOPS_NONE
        field = FIELDS[key]
        value = row.get(key)
        table.add_row(field.title, field.text(value) + ("" if value is not None else f"  ({why})"))


SHOWN_SITES = 5


def _short(frame: str) -> str:
    """``model.py(12): forward`` for ``/home/u/proj/model.py(12): forward``."""
    parsed = parse_site(frame)
    return f"{os.path.basename(parsed[0])}({parsed[1]}): {parsed[2]}" if parsed else frame


def _call_sites(table: Any, sites: Sequence[Mapping[str, Any]], library_frames: bool) -> None:
    """Where the row was called from (a profile with stacks): each site's CPU self time
    and share of the row's, largest first, with the user's frames around it; torch's
    frames inside it folded (F unfolds them); L shows them by line over every row."""
    folded = 0
    for index, site in enumerate(sites[:SHOWN_SITES]):
        share = site.get("share")
        said = (
            f"{neutralise_controls(str(site['site']))}  {format_seconds(site['cpu_self_seconds'])}"
        )
        if share is not None:
            said += f" ({share:.0%})"
        table.add_row("called from" if index == 0 else "", said)
        inner, _, outer = split_stack(str(site.get("stack") or ""))
        if outer:
            chain = " ← ".join(_short(frame) for frame in outer)
            table.add_row("", neutralise_controls(f"  ← {chain}"))
        if inner and library_frames:
            chain = " ← ".join(_short(frame) for frame in inner)
            table.add_row("", neutralise_controls(f"  inside: {chain}"))
        folded += len(inner) if not library_frames else 0
    if len(sites) > SHOWN_SITES:
        table.add_row("", f"(+{len(sites) - SHOWN_SITES} more sites: L shows every line)")
    if folded:
        table.add_row("", Text(f"({folded} frames of torch's and the library's folded: F shows "
                               "them)", style="dim"))  # fmt: skip
