"""The torchscan-tui app: one App for every mode, each mode a screen.

:func:`create_app` is the one factory the CLI and the tests use. It picks the screen the
app opens on (its default screen): the profile screen for a run or a reopened file, the
compare screen for two profiles, the picker for a directory of traces. The app itself
owns only what is the process's: the stylesheet, notices shown literally, the terminal
going away, quitting, and the command palette (each screen lists its own actions).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from textual.app import App, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import Screen

from torchscan_tui.common.startup import started
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.formats.kept_trace import KeptTrace
from torchscan_tui.formats.report_pages import PendingRows
from torchscan_tui.formats.report_schema import Report
from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.sources import LiveSource, ReportSource, RunSource
from torchscan_tui.ui.screens.profile_screen import ProfileScreen


class TorchscanApp(App[object]):
    """The app around one main screen; its result is the picker's choice, if any."""

    CSS_PATH = "app.tcss"
    TITLE = "torchscan-tui"

    def __init__(self, main_screen: Screen, *, handle_hangup: bool = False):
        super().__init__()
        self.main_screen = main_screen
        self.handle_hangup = handle_hangup

    def get_default_screen(self) -> Screen:
        return self.main_screen

    def on_mount(self) -> None:
        # The first frame is up: start-up's objects are frozen, the collector resumes.
        self.call_after_refresh(started)
        if self.handle_hangup:
            # SIGTERM quits like q does; a closed terminal (SIGHUP) cannot: see _hung_up.
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self._terminated)
            signal.signal(signal.SIGHUP, self._hung_up)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice shows its message literally: markup off, controls made visible
        (messages hold paths, operator names and errors from outside)."""
        super().notify(
            neutralise_controls(str(message)),
            title=neutralise_controls(str(title)),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def _terminated(self) -> None:
        quit_main = getattr(self.main_screen, "action_quit", None)
        self.call_later(quit_main or self.exit)

    def _hung_up(self, signum: int, frame: object) -> None:
        """The terminal is gone (SIGHUP: an SSH drop, a killed tmux server).

        Quitting through the event loop, as for SIGTERM, never happened: the next frame
        blocks the loop for good (Textual's writer thread dies on the closed terminal and
        its queue fills), and the input thread spins on the dead terminal: the app lived
        on at 40-120% CPU. So a thread cancels the run, waits for it as q does, cleans up
        and ends the process; there is no terminal left to restore.
        """
        threading.Thread(target=self._leave_after_hangup, name="hangup", daemon=True).start()

    def _leave_after_hangup(self) -> None:
        if isinstance(self.main_screen, ProfileScreen):
            self.main_screen.leave_after_hangup()
        os._exit(128 + signal.SIGHUP)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's own commands (its Quit stands for ours), then the screen's actions."""
        yield from super().get_system_commands(screen)
        palette_commands = getattr(screen, "palette_commands", None)
        if palette_commands is not None:
            yield from palette_commands()


def create_app(
    *,
    config: RunConfig | None = None,
    report: Report | None = None,
    report_path: str = "report.json",
    pending_rows: PendingRows | None = None,
    source: RunSource | None = None,
    diff: dict | None = None,
    rediff: Callable[[str], dict] | None = None,
    traces: tuple[Path, list[Path]] | None = None,
    trace: KeptTrace | None = None,
    show_clock: bool = True,
    handle_hangup: bool = False,
) -> TorchscanApp:
    """The one factory the CLI and the tests use; exactly one of ``config`` (run a
    workload), ``report`` (reopen one), ``source`` (events from anywhere), ``diff``
    (compare two profiles; ``rediff(by)`` compares them again matched by "shape" or
    "operator") or ``traces`` (a folder and its traces to pick from). ``trace``: the
    reopened file itself, held open, when it is a trace (what ``t`` exports)."""
    screen: Screen
    if diff is not None:
        from torchscan_tui.ui.screens.compare_screen import CompareScreen

        screen = CompareScreen(diff, rediff)
    elif traces is not None:
        from torchscan_tui.ui.screens.picker_screen import PickerScreen

        screen = PickerScreen(*traces)
    else:
        if source is None:
            if config is not None:
                source = LiveSource(config)
            elif report is not None:
                source = ReportSource(report, report_path, pending_rows, trace)
            else:
                raise ValueError("create_app needs a config, a report, a source, a diff or traces")
        screen = ProfileScreen(source, show_clock=show_clock)
    return TorchscanApp(screen, handle_hangup=handle_hangup)
