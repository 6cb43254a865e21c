"""What the profile screen writes: selected rows (e), the Chrome trace (t), the session as
a report (w). Each asks where, then writes atomically off the UI thread (RowsScreen)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.worker import get_current_worker

from torchscan_tui.analysis.sorting import has_device_time
from torchscan_tui.common.formatting import counted
from torchscan_tui.formats.export import TRACE_PRIVACY_NOTE
from torchscan_tui.formats.report import save_report
from torchscan_tui.formats.report_schema import Report
from torchscan_tui.ui.screens.profile_base import ProfileBase

if TYPE_CHECKING:
    from torchscan_tui.ui.screens.export_dialog import ExportRequest


class ProfileExports(ProfileBase):
    def action_export_rows(self) -> None:
        rows = self.view.rows_to_export(self.table.cursor)
        what = counted(len(rows), "selected row") if self.view.selected else "the highlighted row"
        hidden = self.view.hidden_selected()
        if hidden:
            what += f", {hidden} of them hidden by the filter"
        self.ask_to_export_rows(
            "Export rows",
            "torchscan-rows.csv",
            f"Exports {what}. The format follows the extension: .csv, .json or .md.",
            rows,
            counted(len(rows), "row"),
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
            saved: Report = {**report, "operators": self.ranks.session_rows(self.view.rows)}
            reopen = "; reopen it with: torchscan-tui {path}"
            self.write_export(partial(save_report, saved), request, "the report", reopen)
