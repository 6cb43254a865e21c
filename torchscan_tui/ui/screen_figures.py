"""What the profile screen's widgets show, from the run's state (pure: no widget here).

The screen sets each widget's attribute from these (attributes down); each is a plain
function of the :class:`~torchscan_tui.ui.run_state.RunState` and the row view, tested
without an app.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan_tui.analysis.device_summary import device_line
from torchscan_tui.analysis.diagnostics import DEVICE_UNAVAILABLE_CODES
from torchscan_tui.analysis.memory_timeline import device_peak_words
from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.analysis.sorting import SORT_FIELDS
from torchscan_tui.analysis.step_summary import peak_scope, unprofiled_line
from torchscan_tui.formats.report_schema import RANK_TRACES_SOURCE, TRACE_SOURCE
from torchscan_tui.ui.action_rules import Facts
from torchscan_tui.ui.run_state import RunState
from torchscan_tui.ui.widgets.rss_panel import RssFigures
from torchscan_tui.ui.widgets.run_header import Heading, totals_line
from torchscan_tui.ui.widgets.status_bar import RowCounts


def heading_of(
    state: RunState,
    title: str,
    device: str,
    elapsed: float | None,
    tick: int,
    shown_rank: int | None,
) -> Heading:
    """The header: ``device`` is the source's, said where the run says none. While a
    trace is read in the app, the figures said are its first part's, and say so."""
    said = device_line(state.context) or state.context.get("device")
    part = state.opening  # the early rows' head (formats/early_rows.py)
    device = (f"{said}, in the first part" if part else said) if said else device
    codes = {note.get("code") for note in state.diagnostics}
    if codes & DEVICE_UNAVAILABLE_CODES:
        device += " (unavailable: CPU-side only, see the notes)"
    totals = totals_line(state.context, shown_rank)
    return Heading(
        title=title,
        device=device,
        phase=state.phase,
        phase_label=state.phase_label(),
        elapsed=elapsed,
        running=state.running,
        tick=tick,
        incomplete=state.outcome == "done" and not state.complete,
        totals=f"first part: {totals}" if part and totals else totals,
    )


FAILED_NOTE = "failed"
FIRST_NOTES = frozenset({"no_rows"})  # why the table is empty: said before any other note


def notes_of(state: RunState) -> tuple[tuple[str, str], ...]:
    """The notes line: why a failed run failed first (it stays until the next run: the
    toast that says it is gone in seconds), then why the table is empty if it is, then
    each other note's code and message."""
    notes = [
        (str(note.get("code", "note")), str(note.get("message", ""))) for note in state.diagnostics
    ]
    notes.sort(key=lambda note: note[0] not in FIRST_NOTES)  # stable: the rest keep order
    if state.outcome == "failed" and state.message:
        notes.insert(0, (FAILED_NOTE, state.message))
    return tuple(notes)


def rss_figures_of(state: RunState) -> RssFigures:
    """The peak: the kernel's figure, what it covers, how its pass ended and ran."""
    run = (state.report or {}).get("run") or {}
    measured = {"rss_status": state.rss_status, "rss_wall_seconds": state.rss_wall_seconds}
    return RssFigures(
        rss=state.rss,
        status=state.rss_status,
        wall_seconds=state.rss_wall_seconds,
        samples=tuple(map(tuple, state.samples)),
        leftovers=state.rss_leftovers,
        pending=(state.running and not state.opening) or state.phase == "starting",
        scope=peak_scope(measured),
        steps_line=unprofiled_line(run, state.context),
        missing=_why_no_peak(state),
        device_peak=device_peak_words(state.context),
    )


def _why_no_peak(state: RunState) -> str:
    """Why a run that has ended shows no peak: the peak pass runs after the profile."""
    if state.phase == "cancelled" and state.rss is None:
        return "cancelled during the profile, before the peak-RSS pass"
    if state.phase == "failed" and state.rss is None:
        return "the profile failed, so the peak-RSS pass did not run"
    if state.context.get("source") in (TRACE_SOURCE, RANK_TRACES_SOURCE):
        return "a profiler trace records no process RSS; run the script itself to measure it"
    return "no RSS figure for this run or file"


def share_of(state: RunState, sort_key: str) -> tuple[str, float | None]:
    """The time field the share column divides (the sorted one, else the one the rows
    are ranked by) and its sum over every row (None: not measured)."""
    if sort_key in ("cpu", "device"):
        field = SORT_FIELDS[sort_key]
    else:
        ranked = state.context.get("ranked_by")
        field = ranked if ranked == SORT_FIELDS["device"] else SORT_FIELDS["cpu"]
    sums: Mapping[str, Any] = state.context
    return field, sums.get(field.replace("_seconds", "_seconds_sum"))


def row_counts_of(state: RunState, view: RowView, message: str) -> RowCounts:
    """The status line: rows shown, received and grouped, the filter, sort and selection."""
    return RowCounts(
        shown=len(view.visible),
        received=len(view.rows),
        total=state.context.get("total_grouped_operators"),
        row_limit=state.context.get("row_limit"),
        filter_text=view.filter.text,
        sort_label=view.sort.describe(),
        selected=len(view.selected),
        noise_hidden=view.hide_noise,
        message=message,
        ended=state.outcome is not None,
    )


def facts_of(
    state: RunState, rerunnable: bool, device_time: bool, ranks: bool, log_shown: bool
) -> Facts:
    """What the action rules read (ui/action_rules.py)."""
    trace = state.trace
    overview = state.overview
    return Facts(
        running=state.running,
        peak_pass=state.phase == "measuring",
        rerunnable=rerunnable,
        kept_trace=str(trace.path) if trace is not None else None,
        trace_open=trace is not None and trace.open,
        named_trace=state.trace_path,
        has_report=state.report is not None,
        device_time=device_time,
        kernels=bool(state.kernels),
        ranks=ranks,
        steps=bool(overview and overview.get("steps")),
        sites=bool(state.context.get("call_sites")),
        sites_missing=state.context.get("call_sites_missing"),
        memory=bool(state.memory and state.memory.get("devices")),
        modules=bool(state.modules and len(state.modules.get("nodes") or ()) > 1),
        log=bool(state.log.lines) or log_shown,
        reading=state.opening,
    )
