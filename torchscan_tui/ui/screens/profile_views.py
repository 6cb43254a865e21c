"""The views the profile screen opens over its rows: the chart (b), the kernel view (k),
the step overview (o) and the rank picker (R). Each screen loads when first opened."""

from __future__ import annotations

import os

from rich.console import RenderableType

from torchscan_tui.analysis.device_summary import device_line
from torchscan_tui.analysis.kernel_view import KERNEL_COLUMNS
from torchscan_tui.analysis.records import KernelRow
from torchscan_tui.analysis.shares import FIELD_LABELS, chart_fields, time_shares
from torchscan_tui.analysis.sorting import SORT_FIELDS
from torchscan_tui.analysis.step_summary import startup_words, step_line
from torchscan_tui.common.formatting import counted
from torchscan_tui.ui.palette import palette_of
from torchscan_tui.ui.screens.profile_base import ProfileBase
from torchscan_tui.ui.widgets.charts import share_chart


class ProfileViews(ProfileBase):
    def action_chart(self) -> None:
        """Bars of the shown rows' self time per operator (the filter applies)."""
        from torchscan_tui.ui.screens.chart_screen import ChartScreen

        rows = self.view.visible_rows()
        fields = chart_fields({"c": SORT_FIELDS["cpu"], "g": SORT_FIELDS["device"]})

        def draw(field_name: str, width: int) -> RenderableType:
            return share_chart(time_shares(rows, field_name), FIELD_LABELS[field_name], width,
                               palette_of(self.app))  # fmt: skip

        start = "g" if self.view.sort.key == "device" else "c"
        scope = f"{len(rows):,} rows" + (
            f", filter {self.view.filter.text!r}" if self.view.filter.text else ""
        )
        self.app.push_screen(ChartScreen(f"Where the time goes ({scope})", fields, draw, start))

    def action_kernels(self) -> None:
        """The kernel view: device work by kernel name and the op that launched it."""
        from torchscan_tui.ui.screens.kernel_screen import KernelScreen

        summary = device_line(self.state.context) or ""
        self.app.push_screen(KernelScreen(self.state.kernels, summary, self._export_kernels))

    def _export_kernels(self, rows: list[KernelRow]) -> None:
        self.ask_to_export_rows(
            "Export kernels",
            "torchscan-kernels.csv",
            f"Exports the {len(rows)} kernel group(s) shown, in their order: .csv, .json or .md.",
            rows,
            f"{len(rows)} kernel group(s)",
            KERNEL_COLUMNS,
        )

    def action_overview(self) -> None:
        """The step overview: each profiled step's time split, and what to try."""
        from torchscan_tui.ui.screens.overview_screen import OverviewScreen

        overview = self.state.overview or {}
        line = step_line(self.state.context)
        title = [f"Step overview: {line}" if line else "Step overview"]
        startup = startup_words((self.state.report or {}).get("run"))
        if startup is not None:  # what the window never sees, from the peak pass
            title.append(f"Before the steps: {startup.replace('the first', 'the first step')}")
        self.app.push_screen(OverviewScreen(overview, title))

    def action_memory(self) -> None:
        """M: the allocator over the window, beside the process's peak RSS."""
        from torchscan_tui.ui.screens.memory_screen import MemoryScreen

        rss = self.state.rss.get("value") if self.state.rss else None
        screen = MemoryScreen(self.state.memory or {}, rss, "Memory", self.state.samples,
                              self._export_memory)  # fmt: skip
        self.app.push_screen(screen)

    def _export_memory(self, rows: list[dict]) -> None:
        from torchscan_tui.analysis.memory_timeline import MEMORY_COLUMNS

        self.ask_to_export_rows(
            "Export memory",
            "torchscan-memory.csv",
            "Exports what each allocator held at the window's peak and each category's bytes "
            "at the traced step's peak: .csv, .json or .md.",
            rows,
            counted(len(rows), "memory row"),
            MEMORY_COLUMNS,
        )

    def action_by_line(self) -> None:
        """L: self time by source line, from the shown rows' call sites (the filter applies)."""
        from torchscan_tui.ui.screens.by_line_screen import ByLineScreen

        rows = self.view.visible_rows()
        trace = self.state.trace_path
        roots = [os.path.dirname(trace)] if trace else []
        total = self.state.context.get("cpu_self_seconds_sum")
        words = self.view.filter.text
        scope = f"the rows of the filter {words!r}" if words else "every row"
        self.app.push_screen(ByLineScreen(rows, total, [*roots, os.getcwd()], scope))

    def action_edit_site(self) -> None:
        """E: the highlighted row's largest call site, opened in $VISUAL / $EDITOR."""
        from torchscan_tui.analysis.sites import parse_site
        from torchscan_tui.ui.editor import open_in_editor

        row = self.table.highlighted_row
        sites = [parse_site(site["site"]) for site in (row or {}).get("sites") or []]
        found = next((site for site in sites if site is not None), None)
        if found is None:
            self.notify("This row has no call site of your code to open.", title="E",
                        severity="information")  # fmt: skip
            return
        trace = self.state.trace_path
        roots = [os.path.dirname(trace)] if trace else []
        said = open_in_editor(self.app, found[0], found[1], [*roots, os.getcwd()])
        if said:
            self.notify(said, title="Open the call site", severity="warning")

    def action_modules(self) -> None:
        """T: the nn.Module tree, each module's time, calls and operators."""
        from torchscan_tui.ui.screens.module_screen import ModuleScreen

        modules = self.state.modules
        if not modules:
            return
        steps = (self.state.context.get("steps") or {}).get("profiled")
        over = f"over the window's {steps} step(s)" if steps else "over the whole profile"
        title = f"CPU time by nn.Module, its own and with its children's, {over}"
        trace = self.state.trace_path
        roots = [os.path.dirname(trace)] if trace else []
        self.app.push_screen(ModuleScreen(modules, title, [*roots, os.getcwd()]))

    def action_ranks(self) -> None:
        """R: choose whose rows the table shows: one rank's, or the cross-rank view."""
        from torchscan_tui.analysis.ranks import straggler_lines
        from torchscan_tui.ui.screens.rank_screen import RankScreen

        lines = straggler_lines(self.state.context)
        screen = RankScreen(self.per_rank(), lines, self.shown_rank)
        self.app.push_screen(screen, self._show_rank)

    def _show_rank(self, choice: object) -> None:
        if not isinstance(choice, tuple):
            return  # closed without a choice
        rows = self.ranks.choose(choice[1], self.view.rows, self.per_rank())
        if rows is None:
            return
        self.view.set_rows(list(rows))
        self.render_all(rows_replaced=True)
        self.notify(self.ranks.described(), title="Showing")
