"""Target 4: ``torchscan-tui report.json`` to the first painted row (<= 0.5 s), and the UI
process's peak RSS holding 100k rows (<= 150 MiB), without importing torch.

Run in a real terminal (tmux): the clock starts when the command is started and stops when
the first row shows on the screen, polled every 5 ms. Baseline: the least a Textual app
can do, a one-widget app started the same way and timed to its text showing. For
reference it also times the issue's own yardstick, ``import textual.app`` in a fresh
process: the issue measured it at ~0.19 s where it set 0.5 s, and this machine's speed
varies by the hour, so our time is printed as a ratio to it too (the target's: 2.63). Memory is
the process's own high-water mark (VmHWM) once every row is in and the app has settled
(its filter index and sort orders built: its RSS unchanged for 1.5 s); the process's
memory maps are checked for libtorch. Keys (issue 31): a filter keystroke timed to the
status line that names the filter, against a bare app's ``Input`` echoing a key and a
bare app redrawing 44 lines; and a cursor move (``j``) timed to the next row's line
taking the cursor's colour (``capture-pane -e``), against the same echo.

    python -m benchmarks.report_open [--rows 100000] [--repeats 3]
"""

from __future__ import annotations

import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torchscan_tui.formats.report import SCHEMA_NAME, SCHEMA_VERSION, save_report

from ._terminal import Terminal
from ._timing import benchmark_args, byte_compile_package, report
from .table import real_rows

INPUT_APP = """
from textual.app import App
from textual.widgets import Input, Static
class Echo(App):
    def compose(self):
        yield Static("first row painted")
        yield Input(id="echo")
    def on_mount(self):
        self.query_one(Input).focus()
Echo().run()
"""
# A second yardstick for the keystroke: the least a Textual app can do that redraws a
# screen of rows per key, as a filter does (a bare Input echoes one character): 44 lines
# of our table's width, other lines at each key, and the status line the benchmark
# waits for. No filtering, no table widget: only the terminal's and Textual's share.
TABLE_APP = """
from textual.app import App
from textual.widgets import Input, Static
ROWS = [f"aten::op{i % 97:<30} [[{i}, 512], [512, 128]]{i * 7 % 1000:>12} {i % 13:>6}"
        f"{i * 0.37:>14.6f}{i * 0.11:>14.6f}{i * 4096:>14}" for i in range(100_000)]
class Table(App):
    def compose(self):
        yield Static("first row painted")
        yield Static(id="rows", markup=False)
        yield Static(id="status", markup=False)
        yield Input(id="echo")
    def on_mount(self):
        self.query_one(Input).focus()
        self.show("")
    def on_input_changed(self, event):
        self.show(event.value)
    def show(self, text):
        start = sum(map(ord, text)) * 7919 % (len(ROWS) - 44)  # every key: other rows
        picked = ROWS[start : start + 44]
        self.query_one("#rows", Static).update("\\n".join(picked), layout=False)
        self.query_one("#status", Static).update(f"filter “{text}”", layout=False)
Table().run()
"""
MINIMAL_APP = """
from textual.app import App
from textual.widgets import Static
class Minimal(App):
    def compose(self):
        yield Static("first row painted")
Minimal().run()
"""


def write_report(path: Path, rows: list[dict]) -> None:
    report_ = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": rows,
        "context": {
            "device": "cpu",
            "row_limit": None,
            "total_grouped_operators": len(rows),
            "ranked_by": "cpu_self_seconds",
            "cpu_self_seconds_sum": sum(row["cpu_self_seconds"] for row in rows),
        },
        "diagnostics": [],
        "totals": {"process_peak_rss": None},
        "trace_path": None,
        "workload": {"script": "synthetic.py"},
        "run": {"complete": True},
    }
    save_report(report_, path, overwrite=True)


IMPORT_TEXTUAL = (
    "import time; started = time.perf_counter(); import textual.app; "
    "print(time.perf_counter() - started)"
)


def textual_import_seconds() -> float:
    """The issue's yardstick: importing ``textual.app`` in a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_TEXTUAL], capture_output=True, text=True, check=True
    )
    return float(result.stdout)


def time_to_text(argv: list[str], text: str) -> tuple[float, Terminal]:
    """Seconds from starting ``argv`` in a fresh terminal to ``text`` on its screen."""
    terminal = Terminal(160, 50)
    command = "exec env -u COLUMNS -u LINES " + shlex.join(argv)
    started = time.perf_counter()
    terminal.start(command)
    terminal.wait_for(text, timeout=60, interval=0.005)
    return time.perf_counter() - started, terminal


def memory_mib(pid: int, field: str = "VmHWM") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field}")


def settled_peak_rss_mib(pid: int, quiet_for: float = 1.5, limit: float = 30.0) -> float:
    """The process's peak RSS once it has settled: unchanged for ``quiet_for`` seconds.

    Every row being in is not the end: the app then builds the filter index and the
    sort orders in idle moments, and those stay. The peak that counts includes them.
    """
    deadline = time.monotonic() + limit
    last, quiet_since = memory_mib(pid, "VmRSS"), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = memory_mib(pid, "VmRSS")
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_for:
            break
    return memory_mib(pid)


def keystroke_seconds(terminal: Terminal, key: str, shows: str) -> float:
    """From sending ``key`` to ``shows`` on the screen (polled every 5 ms)."""
    started = time.perf_counter()
    terminal.keys("-l", key)
    terminal.wait_for(shows, timeout=30, interval=0.005)
    return time.perf_counter() - started


SGR = re.compile(r"\x1b\[([0-9;]*)m")
LEADING_SGR = re.compile(r"(?:\x1b\[[0-9;]*m)*")  # always matches, maybe empty
COLOUR_LENGTH = {"5": 3, "2": 5}  # 48;5;N (256 colours), 48;2;R;G;B (true colour)


def background_of(parameters: list[str], background: str | None) -> str | None:
    """The background after one SGR sequence's parameters, in whichever of the ways a
    terminal writes colours (16, 256 or true colour): a line is told by it alone."""
    index = 0
    while index < len(parameters):
        code = parameters[index]
        if code in ("38", "48"):  # an extended colour: its parameters are one code
            length = COLOUR_LENGTH.get(parameters[index + 1] if index + 1 < len(parameters)
                                       else "", 2)  # fmt: skip
            if code == "48":
                background = ";".join(parameters[index : index + length])
            index += length
            continue
        if code in ("", "0", "49"):
            background = None
        elif code.isdigit() and (40 <= int(code) <= 47 or 100 <= int(code) <= 107):
            background = code
        index += 1
    return background


def line_background(screen: str, starts: str) -> str | None:
    """The background colour a line starts with (the first whose text starts ``starts``),
    as ``capture-pane -e`` writes it (the sequences before its first character)."""
    for line in screen.splitlines():
        if SGR.sub("", line).startswith(starts):
            leading = LEADING_SGR.match(line)
            background = None
            for found in SGR.finditer(leading.group(0) if leading else ""):
                background = background_of(found.group(1).split(";"), background)
            return background
    return None


def cursor_moves_seconds(terminal: Terminal, moves: int) -> list[float]:
    """``j`` pressed ``moves`` times on the table (the cursor on its first row), each
    timed until the next row's line takes the cursor's colour (polled every 5 ms)."""
    cursor = line_background(terminal.styled_screen(), f"{1:>7} ")
    assert cursor is not None, "the cursor's line was not found"
    seconds = []
    for row in range(2, moves + 2):
        started = time.perf_counter()
        terminal.keys("j")
        deadline = started + 30
        while line_background(terminal.styled_screen(), f"{row:>7} ") != cursor:
            assert time.perf_counter() < deadline, f"the cursor never reached row {row}"
            time.sleep(0.005)
        seconds.append(time.perf_counter() - started)
    return seconds


def keystrokes_seconds(terminal: Terminal, keys: str, shows: str) -> list[float]:
    """Each of ``keys`` typed in turn, timed until ``shows`` holds the text typed so far
    (``shows.format(typed)``): three samples a start, as one reading of the screen (a
    tmux client started per poll) varies by several ms."""
    return [
        keystroke_seconds(terminal, key, shows.format(keys[: index + 1]))
        for index, key in enumerate(keys)
    ]


def main() -> None:
    args = benchmark_args("rows")
    byte_compile_package()
    # Real-shaped rows (issue 31): cloned from a real report, every field a live run's
    # row carries; the synthetic ones lacked the sites, spreads and notes.
    rows = real_rows(args.rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.json"
        write_report(path, rows)
        size = path.stat().st_size / 2**20
        print(f"report: {args.rows:,} rows, {size:.1f} MiB")
        base, mine, rss, imports, echo, filtered, redrawn = [], [], [], [], [], [], []
        moved: list[float] = []
        for _ in range(args.repeats):
            imports.append(textual_import_seconds())
            seconds, terminal = time_to_text([sys.executable, "-c", INPUT_APP], "first row")
            terminal.wait_for("▔", timeout=10)  # the Input is drawn
            base.append(seconds)
            echo.extend(keystrokes_seconds(terminal, "qxz", "{}"))
            terminal.close()
            _, terminal = time_to_text([sys.executable, "-c", TABLE_APP], "first row")
            terminal.wait_for("filter “”", timeout=10)
            redrawn.extend(keystrokes_seconds(terminal, "add", "filter “{}”"))
            terminal.close()
            argv = [sys.executable, "-m", "torchscan_tui", str(path)]
            seconds, terminal = time_to_text(argv, rows[0]["operator"])
            mine.append(seconds)
            terminal.wait_for(f"{args.rows:,} of {args.rows:,}", timeout=60, interval=0.05)
            pid = terminal.pane_pid()
            maps = Path(f"/proc/{pid}/maps").read_text()
            assert "libtorch" not in maps, "the UI process loaded torch"
            rss.append(settled_peak_rss_mib(pid))
            moved.extend(cursor_moves_seconds(terminal, 3))
            terminal.keys("/")
            terminal.wait_until_gone("Details", timeout=10)  # the filter box has the keys
            filtered.extend(keystrokes_seconds(terminal, "add", "filter “{}”"))
            terminal.close()
    report(
        "report.json to first painted row (a bare Textual app vs torchscan-tui)",
        base,
        mine,
        "<= 1.5 (issue 31); absolute: <= 0.5 s",
    )
    report(
        "a keystroke: echoed in a bare app's Input vs the filtered table's status",
        echo,
        filtered,
        "<= 1.5 (issue 31)",
    )
    report(
        "the same keystroke: a bare app redrawing 44 lines of rows vs the filtered table",
        redrawn,
        filtered,
        "none (what of the keystroke is ours, not the terminal's and Textual's)",
    )
    report(
        "a cursor move (j): echoed in a bare app's Input vs the table's next line highlighted",
        echo,
        moved,
        "none (issue 31's is the filter key; a move repaints the two lines it changes)",
    )
    yardstick = statistics.median(imports)
    print(
        f"  the issue's yardstick, import textual.app: median {yardstick * 1e3:.1f} ms "
        f"(min {min(imports) * 1e3:.1f}, max {max(imports) * 1e3:.1f}); ours / it = "
        f"{statistics.median(mine) / yardstick:.2f} (the target's: 0.5 / 0.19 = 2.63)"
    )
    print(
        f"UI process peak RSS with {args.rows:,} rows: median {sorted(rss)[len(rss) // 2]:.1f} "
        f"MiB (min {min(rss):.1f}, max {max(rss):.1f}); target <= 150 MiB; torch not loaded"
    )


if __name__ == "__main__":
    main()
