"""Bar charts drawn as text: where the self time goes, and what moved in a compare.

Each chart is a Rich table laid out for the width it is given; the bars use the same
eighth-block glyphs as the table's share column. Missing figures are said, not drawn.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from torchscan_tui.analysis.shares import DeltaBar, Shares
from torchscan_tui.common.formatting import format_seconds, share_bar
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.palette import ANSI, Palette

LABEL_WIDTH = 34
FIGURE_WIDTH = 11


def _label(text: str, width: int) -> Text:
    text = neutralise_controls(text)
    return Text(text if len(text) <= width else text[: width - 1] + "…", no_wrap=True)


def share_chart(
    shares: Shares, field_label: str, width: int, palette: Palette = ANSI
) -> RenderableType:
    """Horizontal bars: each top operator's part of the shown rows' total self time."""
    if shares.total_seconds is None:
        reason = (
            f"No {field_label} in these {shares.rows} rows: it was not measured "
            "(no device events in this profile)."
            if shares.rows
            else "No rows to chart (is a filter hiding them all?)."
        )
        return Text(reason, style="italic")
    label_width = min(LABEL_WIDTH, max(12, width // 3))
    bar_width = max(8, width - label_width - FIGURE_WIDTH - 8 - 6)
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, width=label_width)
    table.add_column(no_wrap=True, width=bar_width, style=palette.accent)
    table.add_column(no_wrap=True, justify="right", width=FIGURE_WIDTH)
    table.add_column(no_wrap=True, justify="right", width=6)
    top = max((bar.fraction for bar in shares.bars), default=0.0) or 1.0
    for bar in shares.bars:
        table.add_row(
            _label(bar.label, label_width),
            # Scaled to the largest bar so small shares stay visible; the % is exact.
            share_bar(bar.fraction / top, bar_width),
            format_seconds(bar.seconds),
            f"{bar.fraction:.1%}",
        )
    notes = [
        Text(
            f"{field_label}: {format_seconds(shares.total_seconds)} over {shares.rows:,} rows "
            "(all input shapes of an operator together; bars scaled to the largest)",
            style="dim",
        )
    ]
    if shares.not_measured:
        notes.append(
            Text(f"{shares.not_measured:,} rows have no {field_label} (not measured).", "dim")
        )
    return Group(table, Text(), *notes)


def delta_chart(
    bars: list[DeltaBar], field_label: str, width: int, palette: Palette = ANSI
) -> RenderableType:
    """Diverging bars around an axis: faster to the left (green), slower to the right."""
    if not bars:
        return Text(f"No row's {field_label} changed (or it was not measured).", style="italic")
    label_width = min(LABEL_WIDTH, max(12, width // 3))
    half = max(4, (width - label_width - FIGURE_WIDTH - 6) // 2)
    largest = max(abs(bar.delta) for bar in bars)
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, width=label_width)
    table.add_column(no_wrap=True, width=half, justify="right", style=palette.success)
    table.add_column(no_wrap=True, width=1)
    table.add_column(no_wrap=True, width=half, style=palette.error)
    table.add_column(no_wrap=True, justify="right", width=FIGURE_WIDTH)
    for bar in bars:
        cells = round(abs(bar.delta) / largest * half) or 1
        marker = {"only_after": " (new)", "only_before": " (gone)"}.get(bar.presence, "")
        sign = "+" if bar.delta > 0 else "-"
        table.add_row(
            _label(bar.label + marker, label_width),
            "█" * cells if bar.delta < 0 else "",
            "│",
            "█" * cells if bar.delta > 0 else "",
            sign + format_seconds(abs(bar.delta)),
        )
    legend = Text(
        f"{field_label} after − before: faster ◀ │ ▶ slower; bars scaled to the largest change",
        style="dim",
    )
    return Group(table, Text(), legend)
