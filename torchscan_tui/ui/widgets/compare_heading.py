"""The compare screen's top line: both sides' names, then their totals (CPU self, the
step unprofiled, peak RSS, device self), on a second line where one does not hold both.

Apart from the screen so that it can lay itself out by its width: the names and the
totals break between them, not inside a figure ("CPU" / "self 639.138 ms → 1.239 s").
"""

from __future__ import annotations

import os
from typing import Any

from rich.text import Text
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

from torchscan_tui.common.formatting import format_bytes, format_seconds
from torchscan_tui.common.text import neutralise_controls


def side_names(before: str, after: str) -> tuple[str, str]:
    """The two sides as the heading names them: without the folders they share
    (``runs/a/trace.json``, ``runs/b/trace.json`` -> ``a/trace.json``, ``b/trace.json``),
    so that at 100 columns the after side and the totals are not cut off by two whole
    paths. Names that are not two paths, or are one path, are kept as they are."""
    if before == after or not (os.sep in before or os.sep in after):
        return before, after
    whole = (os.path.abspath(before), os.path.abspath(after))
    try:
        shared = os.path.commonpath(whole)
    except ValueError:  # nothing in common to take off
        return before, after
    names = (os.path.relpath(whole[0], shared), os.path.relpath(whole[1], shared))
    return (before, after) if os.curdir in names else names  # one side holds the other


def compare_heading(diff: dict[str, Any], width: int | None = None) -> Text:
    """Both sides' names and totals: CPU self, peak RSS and device self where known. In
    ``width`` cells, the totals go to a line of their own when both do not fit."""
    names = Text()
    names.append(" compare ", style="bold reverse")
    if diff.get("by") == "operator":
        names.append(" by operator ", style="reverse")
    before, after = side_names(str(diff["before"]), str(diff["after"]))
    names.append(f" {neutralise_controls(before)} → {neutralise_controls(after)}", style="bold")
    totals = _totals(diff["totals"])
    if width is not None and names.cell_len + 2 + totals.cell_len > width:
        return Text.assemble(names, "\n ", totals)
    return Text.assemble(names, "  ", totals)


def _totals(totals: dict[str, Any]) -> Text:
    cpu = totals["cpu_self_seconds"]
    text = Text()
    text.append(f"CPU self {format_seconds(cpu['before'])} → {format_seconds(cpu['after'])}",
                style="dim")  # fmt: skip
    clean = totals.get("unprofiled_step_seconds") or {}
    if clean.get("before") is not None and clean.get("after") is not None:
        text.append(  # the script's own speed, without the profiler: what the gate uses
            f"  step unprofiled {format_seconds(clean['before'])} → "
            f"{format_seconds(clean['after'])}",
            style="bold",
        )
    rss = totals.get("process_peak_rss") or {}
    if rss.get("before") is not None or rss.get("after") is not None:
        text.append(
            f"  peak RSS {format_bytes(rss.get('before'))} → {format_bytes(rss.get('after'))}",
            style="dim",
        )
    device = totals["device_self_seconds"]
    if device["before"] is not None or device["after"] is not None:
        text.append(
            f"  device self {format_seconds(device['before'])} → {format_seconds(device['after'])}",
            style="dim",
        )
    return text


class CompareHeading(Widget):
    """Attributes down: the screen sets :attr:`diff` (``o`` compares again); the heading
    lays itself out in the width it is given."""

    diff: reactive[dict[str, Any]] = reactive(dict, layout=True, always_update=True)

    def __init__(self, diff: dict[str, Any], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(CompareHeading.diff, diff)

    def render(self) -> Text:
        return compare_heading(self.diff, self.size.width or None)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The lines the heading takes in ``width``: its own layout's, and Rich's wrap of
        a line still too long (narrower than either part)."""
        if not width:
            return 0
        return len(compare_heading(self.diff, width).wrap(self.app.console, width))
