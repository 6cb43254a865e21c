"""The profile screen: run a workload (or reopen a file), watch it, browse its operators.

The screen is handed a :class:`~torchscan_tui.run.sources.RunSource` and knows nothing of
how events are made. The source runs in one thread worker and pushes events into an
:class:`~torchscan_tui.ui.event_pump.EventPump`; a timer takes a batch 20 times a second
and applies it in one ``batch_update()``: run events to the :class:`RunState`, rows
straight to the row view. What each widget shows is a pure function of the state
(:mod:`torchscan_tui.ui.screen_figures`); which actions apply, one table
(:mod:`torchscan_tui.ui.action_rules`, read by :mod:`.action_availability`); the views it
opens and its exports live in :mod:`.profile_views` and :mod:`.profile_exports`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from functools import partial

from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.worker import Worker, WorkerState

from torchscan_tui.common.gcpause import freeze_long_lived
from torchscan_tui.run.events import OutputLine, PhaseChanged
from torchscan_tui.run.sources import RunSource
from torchscan_tui.ui.run_driver import QUIT_WAIT_SECONDS
from torchscan_tui.ui.screen_figures import (
    heading_of,
    notes_of,
    row_counts_of,
    rss_figures_of,
    share_of,
)
from torchscan_tui.ui.screens.action_availability import ActionAvailability
from torchscan_tui.ui.screens.profile_exports import ProfileExports
from torchscan_tui.ui.screens.profile_views import ProfileViews
from torchscan_tui.ui.screens.rows_screen import (
    FILTER_BINDINGS,
    HELP_BINDING,
    LEAVE_BINDING,
    NOISE_BINDING,
    SELECTION_BINDINGS,
)
from torchscan_tui.ui.widgets.detail_pane import Detail, DetailPane
from torchscan_tui.ui.widgets.filter_bar import FilterBar
from torchscan_tui.ui.widgets.key_footer import KeyFooter
from torchscan_tui.ui.widgets.log_pane import LogPane
from torchscan_tui.ui.widgets.notes_line import NotesLine
from torchscan_tui.ui.widgets.operator_table import OperatorTable
from torchscan_tui.ui.widgets.rss_panel import RssPanel
from torchscan_tui.ui.widgets.run_header import RunHeader
from torchscan_tui.ui.widgets.status_bar import StatusBar

DRAIN_INTERVAL = 0.05
SPINNER_EVERY = 4  # drain ticks a spinner's turn takes when no clock shows
DRAIN_AGAIN_S = 0.004  # the rest of a batch, after waiting keys and a frame
WARM_UP_INTERVAL = 0.05
HELP_NOTES = [
    ("↑ ↓ j, pgup pgdn, home end", "move"),
    ("enter", "show or hide the detail pane for the highlighted row"),
    ("F", "in the detail pane, show or fold torch's frames above each call site"),
    ("E", "open the highlighted row's largest call site in $VISUAL / $EDITOR"),
    ("/ words", "filter: words, -word, a|b, *norm*, [8, 64], 8x64, [*, 64], kind:runtime"),
    ("ctrl+p", "command palette: every action by name"),
    ("mouse", "click a row to highlight it, double-click to open it, click a title to sort"),
]


class ProfileScreen(ProfileViews, ProfileExports, ActionAvailability):
    """Header, peak RSS, filter, operator table, detail and log panes, status, keys."""

    BINDINGS = [
        HELP_BINDING,
        *FILTER_BINDINGS,
        Binding("c", "sort('cpu')", "CPU", tooltip="Sort by CPU self time; again flips"),
        Binding("g", "sort('device')", "Device", tooltip="Sort by device (CUDA) self time"),
        Binding("n", "sort('calls')", "Calls", tooltip="Sort by call count"),
        Binding("m", "sort('bytes')", "Bytes", tooltip="Sort by CPU net bytes"),
        Binding("i", "sort('cpu_total')", "Total", show=False, tooltip="Sort by CPU total time"),
        Binding("f", "sort('flops')", "FLOPs", show=False, tooltip="Sort by FLOPs"),
        Binding("s", "sort('rank')", "Rank", show=False, tooltip="The report's rank order"),
        NOISE_BINDING,
        *SELECTION_BINDINGS,
        Binding("b", "chart", "Chart", tooltip="Bars: where the self time goes"),
        Binding("k", "kernels", "Kernels", tooltip="Device work by kernel and launching op"),
        Binding("o", "overview", "Steps", tooltip="Step overview: where each step's time went"),
        Binding("L", "by_line", "Lines", tooltip="Self time by source line (call stacks)"),
        Binding("M", "memory", "Memory", tooltip="The allocator: its curve, peak, what it held"),
        Binding("T", "modules", "Modules", tooltip="The nn.Module tree: time per module"),
        Binding(
            "E",
            "edit_site",
            "Edit",
            show=False,
            tooltip="Open the highlighted row's largest call site in $EDITOR",
        ),  # fmt: skip
        Binding(
            "F",
            "library_frames",
            "Frames",
            show=False,
            tooltip="Show or fold torch's frames in the detail pane's call sites",
        ),  # fmt: skip
        Binding("R", "ranks", "Ranks", tooltip="Pick a rank's rows, or the cross-rank view"),
        Binding("e", "export_rows", "Export", tooltip="Export selected rows"),
        Binding("t", "export_trace", "Trace", tooltip="Export the Chrome trace (Perfetto)"),
        Binding("w", "save_report", "Save", show=False, tooltip="Save the session as a report"),
        Binding("l", "toggle_log", "Log", tooltip="Show or hide the workload's output"),
        Binding("r", "rerun", "Rerun", tooltip="Run the workload again"),
        Binding("x", "cancel_run", "Cancel", tooltip="Cancel the run"),
        Binding(
            "x",
            "stop_peak",
            "Stop",
            tooltip="End the peak-RSS run here: the rows are in, the peak covers what ran",
        ),  # fmt: skip
        Binding("q,f10", "quit", "Quit", tooltip="Quit, cancelling any run"),
        LEAVE_BINDING,
    ]
    HELP_NOTES = HELP_NOTES

    def __init__(self, source: RunSource, *, show_clock: bool = True):
        super().__init__(source)
        self.show_clock = show_clock
        self._tick = 0
        self._run_worker: Worker | None = None
        self.library_frames = False  # F: the detail pane's call sites with torch's frames

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
        # The detail pane follows the cursor inside the key that moved it (see the
        # table's ``highlight``), not a frame after the row.
        self.watch(self.table, "highlight", self._render_detail, init=False)
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
        self.ranks.reset()
        self.table.stale = self.last_result.showing
        self.status_message = (
            "the last result, dimmed, until this run's rows come" if self.table.stale else ""
        )
        self.driver.restart()
        self.query_one(LogPane).reset()
        self.render_all(rows_replaced=True)
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
            # The clock and spinner turn; with no clock (a file read in the app), the
            # spinner alone turns at a quarter of the rate: the reading needs the time.
            if (
                self.state.running
                and self.show_clock
                and (self.source.timed or self._tick % SPINNER_EVERY == 0)
            ):
                self._render_header()
            return
        if batch.has_more:  # the rest once waiting keys and a frame have had their turn
            self.set_timer(DRAIN_AGAIN_S, self._drain)
        replaced = False
        with self.app.batch_update():
            first_over_last = bool(batch.rows or batch.replace) and self.last_result.rows_came()
            if batch.replace or first_over_last:
                # this run's first rows (the last result gives way), or rows that take
                # the place of all before them (a rank job's cross-rank rows)
                self.table.stale = False
                self.status_message = ""
                self.view.set_rows(list(batch.rows))
                replaced = True
            elif batch.rows:
                self.view.extend(batch.rows)
            log_lines = self.state.take_pending_log()
            if log_lines:
                self.query_one(LogPane).add_lines(log_lines, self.state.log.dropped)
            # A phase or a line of output changes nothing in the table: not redrawn (a
            # big trace read in the app says how far it is four times a second).
            table = bool(batch.rows or replaced) or not all(
                isinstance(event, (PhaseChanged, OutputLine)) for event in batch.events
            )
            self.render_all(rows_replaced=replaced, table=table)
        if batch.finished:
            self._run_ended()

    def _run_ended(self) -> None:
        self.status_message = ""  # "cancelling…" is over: the header says how it ended
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
                self.status_message = f"the last result: this run was {state.outcome}"
            self.render_all(rows_replaced=True)
        self.render_status()
        for message, title, severity, timeout in self.driver.end_notices():
            self.notify(message, title=title, severity=severity, timeout=timeout)
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
        elapsed = self.state.elapsed() if self.show_clock and self.source.timed else None
        self.query_one(RunHeader).heading = heading_of(
            self.state, self.source.title, self.source.device, elapsed, self._tick,
            self.shown_rank,
        )  # fmt: skip

    def render_all(self, rows_replaced: bool = False, table: bool = True) -> None:
        """Every part from the state; ``table=False``: all but the table and the detail
        pane (nothing they show changed)."""
        self._render_header()
        self.query_one(NotesLine).notes = notes_of(self.state)
        self.query_one(RssPanel).figures = rss_figures_of(self.state)
        if table:
            self._render_table(rows_replaced)
        self.render_status()
        if table:
            self._render_detail()

    def _render_table(self, rows_replaced: bool = False) -> None:
        table = self.table
        share = share_of(self.state, self.view.sort.key)
        if share != (table.share_field, table.share_total):
            table.set_share(*share)
        table.view_changed(rows_replaced=rows_replaced)

    def render_status(self) -> None:
        counts = row_counts_of(self.state, self.view, self.status_message)
        self.query_one(StatusBar).status = counts
        self._refresh_bindings_when_changed()

    def _render_detail(self) -> None:
        pane = self.query_one(DetailPane)
        if pane.display:
            row = self.table.highlighted_row
            pane.detail = Detail(row, self.state.diagnostics, self.state.context,
                                 self.library_frames)  # fmt: skip

    def action_library_frames(self) -> None:
        """F: the detail pane's call sites with torch's and the library's frames, or not."""
        self.library_frames = not self.library_frames
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
        self.view.set_sort(self.view.sort.toggled(key))
        self._render_table()
        self.render_status()
        self._render_detail()

    def action_toggle_log(self) -> None:
        pane = self.query_one(LogPane)
        pane.display = not pane.display

    def action_rerun(self) -> None:
        self.start_run()

    def action_stop_peak(self) -> None:
        if self.source.stop_peak():
            self.status_message = "stopping the peak-RSS run: its figure covers what ran…"
            self.render_status()

    def action_cancel_run(self) -> None:
        self.source.cancel()
        self.status_message = "cancelling…"
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

    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand(
            "Details: every field of the highlighted row, its callers and notes",
            "key: enter",
            self.table.action_activate,
        )
        yield from super().palette_commands()
