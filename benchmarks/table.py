"""Targets 1 and 2: 100k rows in the table; keystroke to filtered table; sorting; loading.

Baseline: Textual's stock DataTable holding the same rows, refiltered the obvious way
(clear, then add the matching rows). Ours: the app's virtual OperatorTable over a RowView.
Both run in a real app under ``App.run_test``. Latency is measured to the first frame the
screen paints after the change was applied (see ``_frames.py``), for real key presses:
typing a filter character by character into the filter box, and pressing sort keys.

    python -m benchmarks.table [--rows 100000] [--repeats 3]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

from textual.app import App
from textual.widgets import DataTable, Input

from torchscan_tui.analysis.filtering import parse_filter
from torchscan_tui.common.formatting import format_shapes
from torchscan_tui.run.events import PhaseChanged, ProfileMeta, RowsReceived, RunFinished
from torchscan_tui.ui.app import create_app

from ._frames import FrameClock, note_calls
from ._timing import benchmark_args

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from reference_rows import matches  # noqa: E402  (the plain filter, as the tests use)
from replay import ReplaySource  # noqa: E402  (recorded events, as the app tests use)

OPS = ["aten::addmm", "aten::mm", "aten::relu", "aten::cat", "aten::sum", "aten::conv2d"]


REAL_REPORT = (
    Path(__file__).resolve().parents[1] / "tests" / "data" / "real_report_train_transformer.json"
)


def real_rows(count: int) -> list[dict]:
    """``count`` rows cloned from a real report's (a live run of a training script: call
    sites with their stacks, per-step spreads, callers, the row-level notes), each with
    its first input dimension moved so every row is a group of its own."""
    import copy
    import json

    base = json.loads(REAL_REPORT.read_text())["operators"]
    rows = []
    for index in range(count):
        row = copy.deepcopy(base[index % len(base)])
        shift = index // len(base)
        shapes = row["input_shapes"]
        if shapes and isinstance(shapes[0], list) and shapes[0]:
            shapes[0][0] = shapes[0][0] + shift
        else:
            row["input_shapes"] = [[shift], *shapes]
        rows.append(row)
    return rows


def synthetic_rows(count: int) -> list[dict]:
    rows = []
    for index in range(count):
        batch = 1 + index % 64
        rows.append(
            {
                "operator": OPS[index % len(OPS)],
                "input_shapes": [[batch, 16 + index % 97], [64]],
                "kind": "operator",
                "calls": 1 + index % 13,
                "cpu_self_seconds": (index % 1000) * 1e-6,
                "device_self_seconds": None,
                "cpu_net_bytes": (index % 7 - 3) * 1024,
                "callers": {},
                "diagnostics": [],
            }
        )
    return rows


def replay(rows: list[dict]) -> ReplaySource:
    context = {
        "device": "cpu",
        "row_limit": None,
        "total_grouped_operators": len(rows),
        "ranked_by": "cpu_self_seconds",
        "cpu_self_seconds_sum": 1.0,
    }
    head = {"context": context, "diagnostics": [], "totals": {}, "trace_path": None}
    events = [PhaseChanged("receiving"), ProfileMeta(head)]
    events += [RowsReceived(rows[i : i + 1000]) for i in range(0, len(rows), 1000)]
    events.append(RunFinished("done", "", {"operators": rows}, True))
    return ReplaySource(events)


class StockTableApp(App):
    def __init__(self, rows):
        super().__init__()
        self.rows = rows

    def compose(self):
        yield Input(id="f")
        yield DataTable(id="t")

    def cells(self, rows):
        return [
            (
                r["operator"],
                format_shapes(r["input_shapes"]),
                r["calls"],
                r["cpu_self_seconds"],
                r["cpu_net_bytes"],
            )
            for r in rows
        ]

    def load(self, rows):
        table = self.query_one(DataTable)
        table.clear()
        table.add_rows(self.cells(rows))

    def on_mount(self):
        self.query_one(DataTable).add_columns("operator", "shapes", "calls", "cpu", "bytes")


async def stock_keystroke(rows, text) -> tuple[float, float]:
    app = StockTableApp(rows)
    async with app.run_test(size=(160, 50)) as pilot:
        clock = FrameClock(app.screen)
        started = time.perf_counter()
        app.load(rows)
        applied = time.perf_counter()
        while clock.first_after(applied) is None:
            await pilot.pause(0.01)
        loaded = clock.first_after(applied) - started
        started = time.perf_counter()
        row_filter = parse_filter(text)
        app.load([row for row in rows if matches(row_filter, row)])
        applied = time.perf_counter()
        while clock.first_after(applied) is None:
            await pilot.pause(0.01)
        return loaded, clock.first_after(applied) - started


async def press_and_wait(pilot, clock: FrameClock, applied: list[float], key: str) -> float:
    """Seconds from pressing ``key`` to the first frame after the view changed."""
    await pilot.pause(0.05)  # settle: no frame of an earlier change is pending
    count = len(applied)
    started = time.perf_counter()
    await pilot.press(key)
    while len(applied) == count or clock.first_after(applied[count]) is None:
        await pilot.pause(0.005)
    return clock.first_after(applied[count]) - started


async def our_app(rows, text) -> tuple[float, list[float], list[float], list[float]]:
    """Load time, per-key filter latencies while typing ``text`` (all keys, and the keys
    that changed the rows shown), and sort latencies."""
    app = create_app(source=replay(rows), show_clock=False)
    batches = note_calls(app.main_screen.view, "extend")
    started = time.perf_counter()
    async with app.run_test(size=(160, 50)) as pilot:
        clock = FrameClock(app.screen)
        while app.main_screen.run_finished_count < 1:
            await pilot.pause(0.01)
        while clock.first_after(batches[-1]) is None:
            await pilot.pause(0.005)
        loaded = clock.first_after(batches[-1]) - started
        await pilot.pause(2.0)  # idle: the app builds its filter index and sort orders now
        applied = note_calls(app.main_screen.view, "refresh")
        await pilot.press("slash")
        keys = ["space" if char == " " else char for char in text]
        keystrokes, changing = [], []
        for key in keys:
            shown = list(app.main_screen.view.visible)
            keystrokes.append(await press_and_wait(pilot, clock, applied, key))
            if app.main_screen.view.visible != shown:  # this key changed the rows the table shows
                changing.append(keystrokes[-1])
        assert app.main_screen.view.filter.text == text and 0 < len(
            app.main_screen.view.visible
        ) < len(rows)
        await pilot.press("escape")
        sorts = [await press_and_wait(pilot, clock, applied, key) for key in "ccnnmm"]
        assert app.main_screen.view.sort.key == "bytes"
        return loaded, keystrokes, changing, sorts


def line(name, samples):
    return (
        f"  {name:<9} median {statistics.median(samples) * 1e3:9.1f} ms "
        f"(min {min(samples) * 1e3:.1f}, max {max(samples) * 1e3:.1f}, n={len(samples)})"
    )


async def main() -> None:
    args = benchmark_args("rows")
    rows = real_rows(args.rows)  # real-shaped (issue 31); synthetic_rows for the old figures
    text = "[8, 64, *]"  # real-shaped rows: the training script's activations
    stock_load, stock_key, our_load, our_key, our_sort, our_changing = [], [], [], [], [], []
    for _ in range(args.repeats):
        loaded, key = await stock_keystroke(rows, text)
        stock_load.append(loaded)
        stock_key.append(key)
        loaded, keys, changing, sorts = await our_app(rows, text)
        our_load.append(loaded)
        our_key.extend(keys)
        our_changing.extend(changing)
        our_sort.extend(sorts)
    for title, base, mine, target in [
        (
            f"keystroke to painted filtered table, {args.rows:,} rows "
            f"(ours: each key of {text!r} typed)",
            stock_key,
            our_key,
            "<= 50 ms",
        ),
        (
            f"loading {args.rows:,} rows to painted (ours: app start, 1,000-row batches)",
            stock_load,
            our_load,
            "<= 0.5 s",
        ),
    ]:
        print(title)
        print(line("baseline", base))
        print(line("ours", mine))
        print(
            f"  ratio     {statistics.median(mine) / statistics.median(base):.3f}   target {target}"
        )
    print("  of which the keys that changed the rows shown (the table repainted):")
    print(line("ours", our_changing))
    print(f"sort key to painted table, {args.rows:,} rows (c c n n m m: each key, then flipped)")
    print(line("ours", our_sort) + "   target <= 50 ms")


if __name__ == "__main__":
    asyncio.run(main())
