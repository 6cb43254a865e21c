"""Asking where to export, then writing there off the UI thread: both apps' export keys.

A mixin for an App. The export dialog loads when first opened (it is not needed to show
a profile, and start-up is measured).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from textual import work

from torchscan_tui.formats.atomic import ExportError
from torchscan_tui.formats.export import COLUMNS, export_rows, format_for

if TYPE_CHECKING:
    from torchscan_tui.ui.screens.export_dialog import ExportRequest

Write = Callable[..., object]
"""``write(path, overwrite=...)``: writes the export atomically and returns the path."""


class Exporting:
    def ask_where(
        self,
        title: str,
        name: str,
        notes: list[str],
        then: Callable[[ExportRequest | None], None],
        validate: Callable[[str], object] | None = None,
        verb: str = "Export",
    ) -> None:
        """The export dialog; ``then`` gets the request, or None when it was cancelled."""
        from torchscan_tui.ui.screens.export_dialog import ExportDialog

        self.push_screen(ExportDialog(title, name, notes, validate=validate, verb=verb), then)

    def ask_to_export_rows(
        self,
        title: str,
        name: str,
        note: str,
        rows: list[dict],
        what: str,
        columns: Sequence[str] = COLUMNS,
    ) -> None:
        """Ask where, then write ``rows`` as CSV, JSON or Markdown (the extension says)."""

        def write_to(request: ExportRequest | None) -> None:
            if request is not None:
                self.write_export(partial(export_rows, rows, columns=columns), request, what)

        self.ask_where(title, name, [note], write_to, format_for)

    @work(thread=True, group="export", exit_on_error=False)
    def write_export(
        self, write: Write, request: ExportRequest, what: str, then_say: str = ""
    ) -> None:
        """Write in a thread (a big export must not freeze the screen), then say how it went.

        ``then_say`` follows the notice, ``{path}`` in it the file written (shell-quoted,
        for a command to copy).
        """
        try:
            written = write(request.path, overwrite=request.overwrite)
        except ExportError as exc:
            self.call_from_thread(self.notify, str(exc), title="Export failed", severity="error")
            return
        message = f"Wrote {what} to {written}" + then_say.format(path=shlex.quote(str(written)))
        self.call_from_thread(self.notify, message, title="Exported")
