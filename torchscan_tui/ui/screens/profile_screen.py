"""The profile screen: run a workload (or reopen a file), watch it, browse its operators.

The screen is handed a :class:`~torchscan_tui.run.sources.RunSource` and knows nothing of
how events are made. The source runs in one thread worker and pushes events into an
:class:`~torchscan_tui.ui.event_pump.EventPump`; a timer takes a batch 20 times a second
and applies it in one ``batch_update()``: run events to the :class:`RunState`, rows
straight to the row view.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING

from rich.console import RenderableType
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.worker import Worker, WorkerState, get_current_worker

from torchscan_tui.analysis.device_summary import device_line
from torchscan_tui.analysis.diagnostics import DEVICE_UNAVAILABLE_CODES
from torchscan_tui.analysis.kernel_view import KERNEL_COLUMNS
from torchscan_tui.analysis.rows import RowView
from torchscan_tui.analysis.shares import FIELD_LABELS, chart_fields, time_shares
from torchscan_tui.analysis.sorting import SORT_FIELDS, has_device_time
from torchscan_tui.analysis.step_summary import step_line
from torchscan_tui.common.gcpause import freeze_long_lived
from torchscan_tui.formats.export import TRACE_PRIVACY_NOTE
from torchscan_tui.formats.report import save_report
from torchscan_tui.run.sources import RunSource
from torchscan_tui.ui.event_pump import EventPump
from torchscan_tui.ui.last_result import LastResult
from torchscan_tui.ui.run_driver import QUIT_WAIT_SECONDS, RunDriver
from torchscan_tui.ui.run_state import RunState
from torchscan_tui.ui.screens.rows_screen import (
    FILTER_BINDINGS,
    HELP_BINDING,
    LEAVE_BINDING,
    NOISE_BINDING,
    SELECTION_BINDINGS,
    RowsScreen,
)
from torchscan_tui.ui.widgets.charts import share_chart
from torchscan_tui.ui.widgets.detail_pane import DetailPane
from torchscan_tui.ui.widgets.filter_bar import FilterBar
from torchscan_tui.ui.widgets.key_footer import KeyFooter
from torchscan_tui.ui.widgets.log_pane import LogPane
from torchscan_tui.ui.widgets.notes_line import NotesLine
from torchscan_tui.ui.widgets.operator_table import OperatorTable
from torchscan_tui.ui.widgets.rss_panel import RssFigures, RssPanel
from torchscan_tui.ui.widgets.run_header import Heading, RunHeader, totals_line
from torchscan_tui.ui.widgets.status_bar import RowCounts, StatusBar

if TYPE_CHECKING:
    from torchscan_tui.ui.screens.export_dialog import ExportRequest

DRAIN_INTERVAL = 0.05
DRAIN_AGAIN_S = 0.004  # the rest of a batch, after waiting keys and a frame
# The actions check_action may hide or show, depending on the run and the rows.
VARIABLE_ACTIONS = (
    "cancel_run", "rerun", "export_trace", "export_rows", "save_report", "chart", "toggle_log",
    "kernels", "overview", "ranks",
)  # fmt: skip
WARM_UP_INTERVAL = 0.05
HELP_NOTES = [
    ("↑ ↓ j, pgup pgdn, home end", "move"),
    ("enter", "show or hide the detail pane for the highlighted row"),
    ("/ words", "filter: words, -word, a|b, *norm*, [8, 64], 8x64, [*, 64], kind:runtime"),
    ("ctrl+p", "command palette: every action by name"),
    ("mouse", "click a row to highlight it, double-click to open it, click a title to sort"),
]


class ProfileScreen(RowsScreen):
    """Header, peak RSS, filter, operator table, detail and log panes, status, keys."""

    BINDINGS = [
        HELP_BINDING,
        *FILTER_BINDINGS,
        Binding("c", "sort('cpu')", "CPU", tooltip="Sort by CPU self time; again flips"),
        Binding("g", "sort('device')", "Device", tooltip="Sort by device (CUDA) self time"),
        Binding("n", "sort('calls')", "Calls", tooltip="Sort by call count"),
        Binding("m", "sort('bytes')", "Bytes", tooltip="Sort by CPU net bytes"),
        Binding("s", "sort('rank')", "Rank", show=False, tooltip="The report's rank order"),
        NOISE_BINDING,
        *SELECTION_BINDINGS,
        Binding("b", "chart", "Chart", tooltip="Bars: where the self time goes"),
        Binding("k", "kernels", "Kernels", tooltip="Device work by kernel and launching op"),
        Binding("o", "overview", "Steps", tooltip="Step overview: where each step's time went"),
        Binding("R", "ranks", "Ranks", tooltip="Pick a rank's rows, or the cross-rank view"),
        Binding("e", "export_rows", "Export", tooltip="Export selected rows"),
        Binding("t", "export_trace", "Trace", tooltip="Export the Chrome trace (Perfetto)"),
        Binding("w", "save_report", "Save", show=False, tooltip="Save the session as a report"),
        Binding("l", "toggle_log", "Log", tooltip="Show or hide the workload's output"),
        Binding("r", "rerun", "Rerun", tooltip="Run the workload again"),
        Binding("x", "cancel_run", "Cancel", tooltip="Cancel the run"),
        Binding("q,f10", "quit", "Quit", tooltip="Quit, cancelling any run"),
        LEAVE_BINDING,
    ]
    HELP_NOTES = HELP_NOTES

    def __init__(self, source: RunSource, *, show_clock: bool = True):
        super().__init__()
        self.driver = RunDriver(source)
        self.show_clock = show_clock
        self.view = RowView()
        self._available_actions: tuple | None = None
        self._tick = 0
        self._run_worker: Worker | None = None
        self._status_message = ""
        self.shown_rank: int | None = None  # in a multi-rank session: whose rows (None: all)
        self._all_ranks_rows: list = []  # the cross-rank rows while one rank's are shown
        self.last_result = LastResult()  # what r keeps on screen, dimmed, until rows come

    @property
    def source(self) -> RunSource:
        return self.driver.source

    @property
    def state(self) -> RunState:
        return self.driver.state

    @property
    def pump(self) -> EventPump:
        return self.driver.pump

    @property
    def run_finished_count(self) -> int:
        """How many runs have ended on screen (tests wait on it)."""
        return self.driver.finished_count

    # Layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield RunHeader(id="run-header")
        yield NotesLine(id="notes-line")
        yield RssPanel(id="rss-panel")
        yield FilterBar(id="filter-bar")
        yield OperatorTable(self.view, id="operator-table")
        yield DetailPane(id="detail-pane")
        yield LogPane(id="log-pane")
        yield StatusBar(id="status-bar")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.watch_filter_input()
        self.table.focus()
        self.set_interval(DRAIN_INTERVAL, self._drain)
        self.start_run()

    def on_unmount(self) -> None:
        """However the app ends (q, an error, a test leaving ``run_test``), the run goes
        with it: its processes are cancelled and its private files (the trace kept for
        ``t``) removed."""
        self.driver.leave()

    def leave_after_hangup(self) -> None:
        """From a thread, the terminal gone: cancel the run, wait for it as q does, clean up."""
        worker = self._run_worker
        self.driver.leave_after_hangup(lambda: worker is None or worker.is_finished)

    # Running --------------------------------------------------------------------------

    def start_run(self) -> None:
        self.view.set_rows(self.last_result.begin_run())
        self.shown_rank = None
        self.table.stale = self.last_result.showing
        self._status_message = (
            "the last result, dimmed, until this run's rows come" if self.table.stale else ""
        )
        self.driver.restart()
        self.query_one(LogPane).reset()
        self._render_all(rows_replaced=True)
        if self.pump:
            self._drain()  # a reopened report's first rows, before the first frame
        self._run_worker = self._run_source()
        self.call_after_refresh(self.driver.first_frame_out)

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def _run_source(self) -> None:
        # Its worker exists from the start, for whoever waits on the run; the source
        # itself starts once the first frame is out (see RunDriver.run).
        self.driver.run()

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure ends up here: a notification and a failed state."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        message = f"{type(error).__name__}: {error}"
        if event.worker.group == "run":
            self.driver.broke(message)
        else:
            self.notify(message, title="Error", severity="error", timeout=10)

    def _drain(self) -> None:
        """Apply the events that arrived since the last tick, in one batch."""
        try:
            self._apply_batch()
        except NoMatches:
            # Only while the screen is torn down: Textual removes the widgets one at a
            # time, awaiting between them, and this tick can come in between. There is
            # nothing left to show.
            return

    def _apply_batch(self) -> None:
        self._tick += 1
        batch = self.driver.take()
        if batch is None:
            if self.state.running and self.show_clock:
                self._render_header()
            return
        if batch.more:  # the rest once waiting keys and a frame have had their turn
            self.set_timer(DRAIN_AGAIN_S, self._drain)
        replaced = False
        with self.app.batch_update():
            first_over_last = bool(batch.rows or batch.replace) and self.last_result.rows_came()
            if batch.replace or first_over_last:
                # this run's first rows (the last result gives way), or rows that take
                # the place of all before them (a rank job's cross-rank rows)
                self.table.stale = False
                self._status_message = ""
                self.view.set_rows(list(batch.rows))
                replaced = True
            elif batch.rows:
                self.view.extend(batch.rows)
            log_lines = self.state.take_pending_log()
            if log_lines:
                self.query_one(LogPane).add_lines(log_lines, self.state.log.dropped)
            self._render_all(rows_replaced=replaced)
        if batch.finished:
            self._run_ended()

    def _run_ended(self) -> None:
        self._status_message = ""  # "cancelling…" is over: the header says how it ended
        state = self.state
        stood_in = self.last_result.showing  # no row came: back to the last result
        rows, state.head = self.last_result.run_ended(
            state.outcome or "", self.view.rows, state.head
        )
        if stood_in:
            self.table.stale = False
            if rows is not None:  # a done run without rows: that is what shows
                self.view.set_rows(rows)
            else:
                self._status_message = f"the last result: this run was {state.outcome}"
            self._render_all(rows_replaced=True)
        self.render_status()
        for message, title, severity, timeout in self.driver.end_notices():
            self.notify(message, title=title, severity=severity, timeout=timeout)  # type: ignore[arg-type]
        if self.state.outcome == "failed" and self.state.details:
            self.query_one(LogPane).display = True
        self._warm_up(self.view.warm_up(), first=True)

    def _warm_up(self, steps: Iterator[None], first: bool = False) -> None:
        """The filter index and sort orders, built a slice per idle moment (each ~30 ms)
        once the rows are in, so the first filter or sort key does not wait for them.
        The first slice waits a moment too: the rows are painted before any of this."""
        if first or next(steps, StopIteration) is not StopIteration:
            self.set_timer(WARM_UP_INTERVAL, partial(self._warm_up, steps))
        else:
            freeze_long_lived()  # the rows, their index and sort orders: see gcpause

    # Rendering (attributes down) ------------------------------------------------------

    def _render_header(self) -> None:
        state = self.state
        elapsed = state.elapsed() if self.show_clock and self.source.timed else None
        device = device_line(state.context) or state.context.get("device") or self.source.device
        codes = {note.get("code") for note in state.diagnostics}
        if codes & DEVICE_UNAVAILABLE_CODES:
            device += " (unavailable: CPU-side only, see the notes)"
        self.query_one(RunHeader).heading = Heading(
            title=self.source.title,
            device=device,
            phase=state.phase,
            phase_label=state.phase_label(),
            elapsed=elapsed,
            running=state.running,
            tick=self._tick,
            incomplete=state.outcome == "done" and not state.complete,
            totals=totals_line(state.context, self.shown_rank),
        )

    def _render_all(self, rows_replaced: bool = False) -> None:
        state = self.state
        self._render_header()
        self.query_one(NotesLine).notes = tuple(
            (str(note.get("code", "note")), str(note.get("message", "")))
            for note in state.diagnostics
        )
        self.query_one(RssPanel).figures = RssFigures(
            rss=state.rss,
            status=state.rss_status,
            wall_seconds=state.rss_wall_seconds,
            samples=tuple(map(tuple, state.samples)),
            leftovers=state.rss_leftovers,
            pending=state.running or state.phase == "starting",
        )
        self._render_table(rows_replaced)
        self.render_status()
        self._render_detail()

    def _render_table(self, rows_replaced: bool = False) -> None:
        table = self.table
        share_field = self._share_field()
        total = self.state.context.get(share_field.replace("_seconds", "_seconds_sum"))
        if (share_field, total) != (table.share_field, table.share_total):
            table.set_share(share_field, total)
        table.view_changed(rows_replaced=rows_replaced)

    def _share_field(self) -> str:
        """The time field the share column divides: the sorted one, else the rank's."""
        key = self.view.sort.key
        if key in ("cpu", "device"):
            return SORT_FIELDS[key]
        ranked = self.state.context.get("ranked_by")
        return ranked if ranked == SORT_FIELDS["device"] else SORT_FIELDS["cpu"]

    def render_status(self) -> None:
        state = self.state
        self.query_one(StatusBar).status = RowCounts(
            shown=len(self.view.visible),
            received=len(self.view.rows),
            total=state.context.get("total_grouped_operators"),
            row_limit=state.context.get("row_limit"),
            filter_text=self.view.filter.text,
            sort_label=self.view.sort.describe(),
            selected=len(self.view.selected),
            noise_hidden=self.view.hide_noise,
            message=self._status_message,
            ended=state.outcome is not None,
        )
        self._refresh_bindings_when_changed()

    def _render_detail(self) -> None:
        pane = self.query_one(DetailPane)
        if pane.display:
            pane.show(self.table.highlighted_row, self.state.diagnostics, self.state.context)

    @on(OperatorTable.Highlighted)
    def _highlighted(self) -> None:
        self._render_detail()

    @on(OperatorTable.Activated)
    def _activated(self) -> None:
        pane = self.query_one(DetailPane)
        pane.display = not pane.display
        self._render_detail()

    # Keys -----------------------------------------------------------------------------

    def action_leave(self) -> None:
        """Escape: leave the filter, else close the detail pane, else clear the selection."""
        if self.typing():
            self.set_focus(self.table)
            return
        pane = self.query_one(DetailPane)
        if pane.display:
            pane.display = False
        elif self.view.selected:  # escape again: the selection goes (as A does)
            self.action_clear_selection()

    def action_sort(self, key: str) -> None:
        if key == "device" and not self.table.has_device_time():
            self.key_g()
            return
        self.view.set_sort(self.view.sort.toggled(key))
        self._render_table()
        self.render_status()
        self._render_detail()

    def action_toggle_log(self) -> None:
        pane = self.query_one(LogPane)
        pane.display = not pane.display

    def action_chart(self) -> None:
        """Bars of the shown rows' self time per operator (the filter applies)."""
        rows = self.view.visible_rows()
        fields = chart_fields({"c": SORT_FIELDS["cpu"], "g": SORT_FIELDS["device"]})

        def draw(field_name: str, width: int) -> RenderableType:
            return share_chart(time_shares(rows, field_name), FIELD_LABELS[field_name], width)

        start = "g" if self.view.sort.key == "device" else "c"
        scope = f"{len(rows):,} rows" + (
            f", filter {self.view.filter.text!r}" if self.view.filter.text else ""
        )
        from torchscan_tui.ui.screens.chart_screen import ChartScreen

        self.app.push_screen(ChartScreen(f"Where the time goes ({scope})", fields, draw, start))

    def action_kernels(self) -> None:
        """The kernel view: device work by kernel name and the op that launched it."""
        from torchscan_tui.ui.screens.kernel_screen import KernelScreen

        summary = device_line(self.state.context) or ""
        self.app.push_screen(KernelScreen(self.state.kernels, summary, self._export_kernels))

    def action_overview(self) -> None:
        """The step overview: each profiled step's time split, and what to try."""
        from torchscan_tui.ui.screens.overview_screen import OverviewScreen

        overview = self.state.overview or {}
        line = step_line(self.state.context)
        title = f"Step overview: {line}" if line else "Step overview"
        self.app.push_screen(OverviewScreen(overview, title))

    def _ranks(self) -> list[dict]:
        """Every rank's summary and rows, in a multi-rank session; [] in any other."""
        report = self.state.report or {}
        return list((report.get("ranks") or {}).get("per_rank") or [])

    def action_ranks(self) -> None:
        """R: choose whose rows the table shows: one rank's, or the cross-rank view."""
        from torchscan_tui.analysis.ranks import straggler_lines
        from torchscan_tui.ui.screens.rank_screen import RankScreen

        lines = straggler_lines(self.state.context)
        self.app.push_screen(RankScreen(self._ranks(), lines, self.shown_rank), self._show_rank)

    def _show_rank(self, choice: object) -> None:
        if not isinstance(choice, tuple):
            return  # closed without a choice
        rank = choice[1]
        by_rank = {summary["rank"]: summary for summary in self._ranks()}
        if self.shown_rank is None:
            self._all_ranks_rows = self.view.rows  # the cross-rank rows, all of them
        if rank is None:
            rows = self._all_ranks_rows
        elif rank in by_rank:
            rows = by_rank[rank]["operators"]
        else:
            return
        self.shown_rank = rank
        self.view.set_rows(list(rows))
        self._render_all(rows_replaced=True)
        self.notify(
            "the cross-rank rows (the median rank's figures)" if rank is None
            else f"rank {rank}'s own rows",
            title="Showing",
        )  # fmt: skip

    def _export_kernels(self, rows: list[dict]) -> None:
        self.ask_to_export_rows(
            "Export kernels",
            "torchscan-kernels.csv",
            f"Exports the {len(rows)} kernel group(s) shown, in their order: .csv, .json or .md.",
            rows,
            f"{len(rows)} kernel group(s)",
            KERNEL_COLUMNS,
        )

    def action_export_rows(self) -> None:
        rows = self.view.rows_to_export(self.table.cursor)
        what = f"{len(rows)} selected row(s)" if self.view.selected else "the highlighted row"
        hidden = self.view.hidden_selected()
        if hidden:
            what += f", {hidden} of them hidden by the filter"
        self.ask_to_export_rows(
            "Export rows",
            "torchscan-rows.csv",
            f"Exports {what}. The format follows the extension: .csv, .json or .md.",
            rows,
            f"{len(rows)} row(s)",
        )

    def action_export_trace(self) -> None:
        notes = [f"{note['code']}: {note['message']}" for note in self.state.diagnostics]
        if not has_device_time(self.view.rows):
            notes.append("This trace holds no device (GPU) activity: only CPU-side events.")
        notes.append(TRACE_PRIVACY_NOTE + " The file is created readable by you only (0600).")
        suffix = self.state.trace.suffix if self.state.trace is not None else ".json"
        self.ask_where(
            "Export Chrome trace", f"torchscan-trace{suffix}", notes, self._export_trace_to
        )

    def _export_trace_to(self, request: ExportRequest | None) -> None:
        trace = self.state.trace
        if request is not None and trace is not None:
            copy = partial(trace.copy_to, cancelled=lambda: get_current_worker().is_cancelled)
            self.write_export(copy, request, "the trace")

    def action_save_report(self) -> None:
        self.ask_where(
            "Save the session as a report",
            "torchscan-report.json",
            ["Reopen it later, without torch, with: torchscan-tui FILE"],
            self._save_report_to,
            verb="Save",
        )

    def _save_report_to(self, request: ExportRequest | None) -> None:
        report = self.state.report
        if request is not None and report is not None:
            # The rows are those received, in rank order: all of them once the run is done
            # (the cross-rank rows while one rank's own are shown).
            rows = self.view.rows if self.shown_rank is None else self._all_ranks_rows
            report = {**report, "operators": rows}
            reopen = "; reopen it with: torchscan-tui {path}"
            self.write_export(partial(save_report, report), request, "the report", reopen)

    def action_rerun(self) -> None:
        self.start_run()

    def action_cancel_run(self) -> None:
        self.source.cancel()
        self._status_message = "cancelling…"
        self.render_status()

    async def action_quit(self) -> None:
        """Quit at once: cancel a run and wait briefly for its processes (the clean-up
        follows as the screen unmounts)."""
        self.driver.begin_leaving()
        worker = self._run_worker
        if worker is not None and not worker.is_finished:
            self.source.cancel()
            try:
                await asyncio.wait_for(worker.wait(), QUIT_WAIT_SECONDS)
            except Exception:  # noqa: BLE001 - a worker error was already reported
                pass
        self.app.exit(return_code=1 if self.state.outcome == "failed" else 0)

    def _refresh_bindings_when_changed(self) -> None:
        """Refresh the footer's keys only when one of them comes or goes.

        Every refresh recomposes the footer (all its keys unmounted and mounted again,
        ~50 ms here); asked for at every batch of rows, that kept a recompose in flight
        through a whole report's loading, and the screen paints nothing meanwhile.
        """
        available = tuple(self.check_action(action, ()) for action in VARIABLE_ACTIONS)
        available += (self.table.has_device_time(),)
        if available != self._available_actions:
            if self._available_actions is not None:  # the footer composed with these
                self.refresh_bindings()
            self._available_actions = available

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        state = self.state
        if action == "cancel_run":
            return state.running
        if action == "rerun":
            return self.source.rerunnable and not state.running
        if action == "export_trace":
            return state.trace is not None and state.trace.open
        if action == "save_report":
            return state.report is not None
        if action == "sort" and parameters == ("device",):
            return self.table.has_device_time()
        if action == "kernels":
            return bool(state.kernels)
        if action == "ranks":
            return bool(self._ranks())
        if action == "overview":
            return bool(state.overview and state.overview.get("steps"))
        if action == "toggle_log":  # a reopened file has no workload output to show
            return self.source.rerunnable or bool(state.log.lines) or self._log_shown()
        return super().check_action(action, parameters)

    # Key methods run only when no binding took the key: t, r and l when they do not apply
    # (hidden from the footer) say why instead of doing nothing. Another screen on top
    # (the kernel view) takes its keys itself: these never hear them.

    def key_t(self) -> None:
        if self.typing():
            return
        state = self.state
        if state.trace is not None:
            why = f"its trace ({state.trace.path}) is gone: the run was replaced"
        elif state.trace_path and not self.source.rerunnable:
            why = (
                f"this report names a trace at {state.trace_path}, which is only shown, never "
                f"copied; to export it, open that trace itself (torchscan-tui FILE)"
            )
        elif state.trace_path:
            why = f"its trace ({state.trace_path}) could not be kept"
        else:
            why = "this run or file has no Chrome trace"
        self.notify(f"No trace to export: {why}.", title="t", severity="warning")

    def key_g(self) -> None:
        """g on a run without device time (its key hidden from the footer): say why."""
        if self.typing():
            return
        self.notify(
            "No device time in this run: it was not measured (CPU-only profile, or the "
            "profiler lacks CUDA support). Rows stay in their current order.",
            title="Cannot sort by device time",
            severity="warning",
        )

    def key_r(self) -> None:
        if not self.typing() and not self.source.rerunnable:
            self.notify(
                "A reopened file has no workload to run again: run the script itself for a "
                "new profile.",
                title="r",
                severity="warning",
            )

    def key_l(self) -> None:
        if not self.typing() and not self.source.rerunnable:
            self.notify("A reopened file has no workload output to show.", title="l")

    def _log_shown(self) -> bool:
        try:
            return self.query_one(LogPane).display
        except NoMatches:  # not composed yet
            return False

    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand(
            "Details: every field of the highlighted row, its callers and notes",
            "key: enter",
            self.table.action_activate,
        )
        yield from super().palette_commands()
