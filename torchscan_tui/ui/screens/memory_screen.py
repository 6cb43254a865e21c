"""``M``: the allocator over the window: its curve, its peak, and what was held at the peak,
beside the process's peak RSS (each said for what it measures).

The figures are the report's ``memory`` block (:mod:`torchscan_tui.analysis.memory_timeline`);
this screen only draws them. Outside text (op names) is shown literally.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.binding import Binding

from torchscan_tui.analysis.memory_timeline import memory_rows
from torchscan_tui.common.formatting import MISSING, format_bytes, format_seconds, format_shapes
from torchscan_tui.ui.literal import literal
from torchscan_tui.ui.palette import ANSI, Palette, palette_of
from torchscan_tui.ui.screens.dialog import DrawnDialog

BLOCKS = " ▁▂▃▄▅▆▇█"
CURVE_RESERVE = 4


def curve_text(timeline: Sequence[Sequence[float]], width: int, palette: Palette = ANSI) -> Text:
    """The timeline as one line of blocks, ``width`` cells over the window's time, each
    cell the highest level in it; the peak's cell is the full block."""
    text = Text()
    if not timeline or width <= 0:
        return text
    end = timeline[-1][0] or 1e-12
    low = min(0.0, min(level for _, level in timeline))
    high = max(level for _, level in timeline)
    cells: list[float | None] = [None] * width
    for seconds, level in timeline:
        cell = min(int(seconds / end * (width - 1)), width - 1) if end > 0 else 0
        current = cells[cell]
        cells[cell] = level if current is None else max(current, level)
    last: float = timeline[0][1]
    span = (high - low) or 1
    for highest in cells:  # a cell no point fell in keeps the level before it
        last = last if highest is None else highest
        index = round((last - low) / span * (len(BLOCKS) - 1))
        text.append(BLOCKS[max(index, 1)], style=palette.memory)
    return text


def time_axis(end: float, width: int) -> Text:
    """``0`` under a curve's first cell and its last time under its end, in the units
    the rest of the app uses (a 107 ms step's window ends at ``107.528 ms``, not
    ``0.108 s``)."""
    label = format_seconds(end)
    return Text(f"0{' ' * max(width - 1 - len(label), 1)}{label}", style="dim")


def peak_marker(timeline: Sequence[Sequence[float]], peak_seconds: float, width: int) -> Text:
    end = (timeline[-1][0] if timeline else 0.0) or 1e-12
    cell = min(int(peak_seconds / end * (width - 1)), width - 1) if width > 0 else 0
    return Text(" " * max(cell, 0) + "▲ peak", style="bold")


def step_marks(steps: Sequence[Sequence[Any]], end: float, width: int) -> Text:
    """A line under the curve: ``│`` where each step starts, its name after it where
    there is room (on the curve's time axis)."""
    cells = [" "] * width
    if end <= 0 or width <= 0:
        return Text("")
    marked = [(min(max(int(seconds / end * (width - 1)), 0), width - 1), name)
              for name, seconds in steps]  # fmt: skip
    for cell, _ in marked:
        cells[cell] = "│"
    for cell, name in marked:  # a name where it fits before the next mark
        label = f"step {name}"
        room = cells[cell + 1 : cell + 2 + len(label)]
        if len(room) > len(label) and all(c == " " for c in room):
            cells[cell + 1 : cell + 1 + len(label)] = list(label)
    return Text("".join(cells).rstrip(), style="dim")


def draw_device(
    device: Mapping[str, Any],
    width: int,
    palette: Palette = ANSI,
    steps: Sequence[Sequence[Any]] = (),
) -> RenderableType:
    curve_width = max(width - CURVE_RESERVE, 10)
    timeline = device.get("timeline") or []
    heading = Text()
    heading.append(f"{device['device']} allocator", style="bold")
    heading.append(
        f"  peak {format_bytes(device['peak_bytes'], signed=True)} over the window's start "
        f"({format_bytes(device['peak_total_bytes'])} held in all)"
    )
    where = []
    if device.get("peak_step") is not None:
        where.append(f"step {device['peak_step']}")
    if device.get("peak_operator"):
        where.append(f"in {device['peak_operator']}")
    where.append(f"{format_seconds(device['peak_seconds'])} into the window")
    about = Text("at " + ", ".join(where), style="dim")
    end = timeline[-1][0] if timeline else 0.0
    axis = time_axis(end, curve_width)
    table = Table(title="held at the peak (made in the window, not yet freed)",
                  title_justify="left", show_edge=False, pad_edge=False)  # fmt: skip
    table.add_column("bytes", justify="right")
    table.add_column("each", justify="right")
    table.add_column("allocs", justify="right")
    table.add_column("made by")
    for group in device.get("held_at_peak") or []:
        table.add_row(
            format_bytes(group["bytes"]),
            f"{group['size']:,} B",
            str(group["count"]),
            literal(f"{group['operator']} {format_shapes(group['input_shapes'] or [])}"),
        )
    held: RenderableType = table
    if not device.get("held_known", True):
        held = Text(
            "held at the peak: this trace's allocations carry no addresses (a trace from "
            "before 2022), so no allocation can be paired with its free",
            style="dim",
        )
    final = Text(
        f"at the window's end: {format_bytes(device['final_bytes'], signed=True)} "
        f"(the rows' net bytes add up to it); {device['allocations']:,} allocations",
        style="dim",
    )
    return Group(
        heading, about, curve_text(timeline, curve_width, palette),
        peak_marker(timeline, device["peak_seconds"], curve_width),
        step_marks(steps, end, curve_width), axis, final, Text(""), held, Text(""),
    )  # fmt: skip


CATEGORY_CHART_ROWS = 6
# torch's export_memory_timeline colours, in its categories' order (parameter, optimizer
# state, input, temporary, activation, gradient, autograd detail, unknown): hues of
# their own, as the step overview's, each also named in the table beside.
CATEGORY_COLOURS = ("green", "yellow", "white", "magenta", "red", "blue", "cyan", "bright_black")


def stacked_chart(device: Mapping[str, Any], width: int) -> list[Text]:
    """The step's memory, each category a stacked band (bottom up in the categories'
    order), ``width`` cells over its time, each cell the point nearest its start."""
    timeline = device.get("timeline") or []
    if not timeline or width <= 0:
        return []
    end = timeline[-1][0] or 1e-12
    high = max(sum(sizes) for _, sizes in timeline) or 1
    columns: list[list[int]] = []
    index = 0
    for cell in range(width):
        at = cell / max(width - 1, 1) * end
        while index + 1 < len(timeline) and timeline[index + 1][0] <= at:
            index += 1
        columns.append(list(timeline[index][1]))
    rows = []
    colours = CATEGORY_COLOURS
    for row in range(CATEGORY_CHART_ROWS, 0, -1):  # top row first
        level = (row - 0.5) / CATEGORY_CHART_ROWS * high
        text = Text()
        for sizes in columns:
            running, shown = 0, None
            for category, size in enumerate(sizes):
                running += size
                if running >= level:
                    shown = category
                    break
            if shown is None:
                text.append(" ")
            else:
                text.append("█", style=colours[shown % len(colours)])
        rows.append(text)
    return rows


def draw_categories(categories: Mapping[str, Any], width: int) -> RenderableType:
    """Memory by category in the traced step: the stacked curve and a table."""
    if categories.get("missing"):
        return Text(f"By category: none ({categories['missing']}).", style="dim")
    parts: list[RenderableType] = []
    for device in categories.get("devices") or []:
        heading = Text()
        heading.append(f"{device['device']} by category", style="bold")
        heading.append(f"  {categories.get('source', '')}", style="dim")
        parts += [heading, *stacked_chart(device, max(width - CURVE_RESERVE, 10))]
        end = device["timeline"][-1][0] if device["timeline"] else 0.0
        parts.append(time_axis(end, width - CURVE_RESERVE))
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("category")
        table.add_column("at the step's peak", justify="right")
        table.add_column("highest in the step", justify="right")
        colours = CATEGORY_COLOURS
        for index, name in enumerate(device["categories"]):
            table.add_row(
                Text("█ ", style=colours[index % len(colours)]) + Text(name),
                format_bytes(device["at_peak"][index]),
                format_bytes(device["largest"][index]),
            )
        table.add_row(Text("all", style="bold"), format_bytes(device["peak_bytes"]), "")
        parts += [table, Text("")]
    return Group(*parts)


def draw_rss(samples: Sequence[Sequence[float]], width: int, palette: Palette = ANSI) -> list[Text]:
    """The process's RSS over the peak pass, as sampled, with its axis."""
    if len(samples) < 2:
        return []
    curve_width = max(width - CURVE_RESERVE, 10)
    low, high = min(v for _, v in samples), max(v for _, v in samples)
    heading = Text("process RSS over the peak pass", style="bold")
    heading.append(f"  sampled, {format_bytes(low)}-{format_bytes(high)}", style="dim")
    end = samples[-1][0]
    return [heading, curve_text(samples, curve_width, palette),
            time_axis(end, curve_width)]  # fmt: skip


def draw_memory(
    memory: Mapping[str, Any],
    rss: float | None,
    width: int,
    palette: Palette = ANSI,
    samples: Sequence[Sequence[float]] = (),
) -> RenderableType:
    """Each device's allocator, then what the process's RSS measures beside it."""
    parts: list[RenderableType] = [
        draw_device(device, width, palette, memory.get("steps") or ())
        for device in memory.get("devices") or []
    ]
    if memory.get("categories"):
        parts.append(draw_categories(memory["categories"], width))
    parts += draw_rss(samples, width, palette)
    parts.append(
        Text(
            f"Peak RSS {format_bytes(rss) if rss is not None else MISSING}: the kernel's "
            "figure for the whole process (Python, libtorch, the allocator's caches, "
            "fragmentation). The allocator's: tensors only, in the profiled window.",
            style="dim",
        )
    )
    return Group(*parts)


class MemoryScreen(DrawnDialog):
    BINDINGS = [
        Binding("escape,q,M", "dismiss", "Close", tooltip="Back to the operators"),
        Binding("e", "export", "Export", tooltip="Export what was held and the categories"),
    ]

    def __init__(
        self,
        memory: Mapping[str, Any],
        rss: float | None,
        title: str,
        samples: Sequence[Sequence[float]] = (),
        export: Callable[[list[dict[str, Any]]], None] | None = None,
    ):
        super().__init__(title)
        self.memory = memory
        self.rss = rss
        self.samples = samples  # the peak pass's RSS samples: [seconds, bytes]
        self.export_rows = export

    def draw(self, width: int) -> RenderableType:
        return draw_memory(self.memory, self.rss, width, palette_of(self.app), self.samples)

    def action_export(self) -> None:
        if self.export_rows is not None:
            self.export_rows(memory_rows(self.memory))
