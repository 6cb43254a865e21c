"""The real command in a real terminal: launch, filter, select, export a CSV, quit.

Driven with tmux send-keys and read with capture-pane, as a person would see it.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import WORKLOADS
from test_report_head import rows_of, saved

from benchmarks._terminal import Terminal
from torchscan_tui.formats.opening import open_profile

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


@pytest.fixture
def terminal():
    term = Terminal(120, 32)
    yield term
    term.close()


def test_launch_filter_select_export_csv_and_quit(terminal, tmp_path):
    out = tmp_path / "picked.csv"
    done = tmp_path / "exit-code"
    command = (
        # pytest exports COLUMNS/LINES, which would override the terminal's real size.
        f"cd {tmp_path} && env -u COLUMNS -u LINES {sys.executable} -m torchscan_tui "
        f"{WORKLOADS / 'tiny.py'} --device cpu; echo $? > {done}"
    )
    terminal.start(command)
    screen = terminal.wait_for(" done")
    assert "Peak RSS" in screen and "MiB" in screen
    assert "aten::mm" in screen
    terminal.wait_for("Details")  # the table has focus: its keys are in the footer
    terminal.keys("/")
    terminal.wait_until_gone("Details")  # focus moved to the filter box
    terminal.keys("-l", "[8, 16]")
    terminal.wait_for("filter “[8, 16]”")
    terminal.keys("Escape")
    terminal.wait_for("Details")  # the footer shows the table's keys once it has focus
    terminal.keys("Space")
    terminal.wait_for("· 1 selected")
    terminal.keys("e")
    terminal.wait_for("Export rows")
    terminal.wait_for("torchscan-rows.csv")  # the dialog's path box, with its default
    terminal.keys("C-u")
    terminal.wait_until_gone("torchscan-rows.csv")
    terminal.keys("-l", str(out))
    terminal.wait_for(out.name)
    terminal.keys("Enter")
    terminal.wait_for("Wrote 1 row to")
    rows = list(csv.DictReader(out.open()))
    assert [row["operator"] for row in rows] == ["aten::mm"]
    assert rows[0]["input_shapes"] == "[[8, 16], [16, 64]]"
    terminal.keys("q")
    deadline = time.monotonic() + 10
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"
    assert not any(Path(tmp_path).glob(".picked.csv.*"))


# Every word a footer key's description ends with (the profile screen's keys).
WHOLE_WORDS = {"Filter", "Help", "CPU", "Device", "Calls", "Bytes", "Select", "Export",
               "Quit", "Details", "Chart", "Kernels", "Steps", "Ranks", "Trace", "Log",
               "Rerun", "Cancel", "Stop", "Memory", "Lines"}  # fmt: skip


def test_the_footer_is_whole_keys_after_tab_and_resizes_in_a_real_terminal(tmp_path):
    """Issue 20, bug 7 (``^p paletteT`` at 80 columns after Tab, ``^p palettea`` after a
    resize to 60) and 16 (``space Selec`` cut at 80): in a real terminal the footer's
    last line holds whole keys and ends with the palette key, at every size."""
    term = Terminal(80, 24)
    try:
        term.start(
            f"cd {tmp_path} && env -u COLUMNS -u LINES {sys.executable} -m torchscan_tui "
            f"{WORKLOADS / 'tiny.py'} --device cpu"
        )
        term.wait_for(" done")

        def footer() -> str:  # once a resize's or a focus change's recompose is done
            return term.steady(lambda screen: screen.rstrip("\n").splitlines()[-1].rstrip())

        for step in ("start", "Tab", "Tab", "resize 60", "resize 120", "resize 80"):
            if step == "Tab":
                term.keys("Tab")
            elif step.startswith("resize"):
                term.tmux("resize-window", "-t", term.name, "-x", step.split()[1])
            last = footer()
            assert last.endswith("^p palette"), (step, last)
            keys = last.rsplit("▏", 1)[0].split()
            assert keys and keys[-1] in WHOLE_WORDS, (step, last)  # never cut mid-word
        term.keys("q")
    finally:
        term.close()


def test_rows_show_before_a_third_of_the_plain_run_has_passed(terminal, tmp_path):
    """Issue 28, 1: the profile comes first, so a 3-epoch script's first row is on screen
    well before the script could have run once (the peak pass runs it whole after)."""
    args = ("3", "60", "0.1")
    started = time.monotonic()
    subprocess.run([sys.executable, str(WORKLOADS / "long_train.py"), *args],
                   capture_output=True, check=True, timeout=300)  # fmt: skip
    plain = time.monotonic() - started
    started = time.monotonic()
    terminal.start(
        f"cd {tmp_path} && env -u COLUMNS -u LINES {sys.executable} -m torchscan_tui "
        f"{WORKLOADS / 'long_train.py'} --device cpu -- {' '.join(args)}"
    )
    terminal.wait_for("aten::addmm", timeout=plain, interval=0.05)
    first_row = time.monotonic() - started
    assert first_row < plain / 3, (first_row, plain)
    terminal.wait_for("run 2 of 2")  # the peak pass goes on after the rows
    terminal.wait_for("x Stop")
    terminal.keys("x")  # ends it there: the rows are in
    terminal.wait_for(" done")
    terminal.keys("q")


def stand_in_editor(tmp_path: Path) -> tuple[Path, Path]:
    """An editor that records its arguments (as JSON, in the second path), says so on
    the terminal and keeps it until the test has seen that (:func:`editor_seen`; 30 s at
    most): one that left after a second could come and go between two looks at a busy
    machine's screen."""
    said = tmp_path / "editor-args.json"
    seen = tmp_path / "editor-seen"
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import json, os, sys, time\n"
        f"open({str(said)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
        "print('stand-in editor', flush=True)\n"
        "deadline = time.monotonic() + 30\n"
        f"while not os.path.exists({str(seen)!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        f"if os.path.exists({str(seen)!r}):\n"
        f"    os.unlink({str(seen)!r})\n"
    )
    return editor, said


def editor_seen(terminal: Terminal, tmp_path: Path) -> None:
    """Wait for the stand-in editor on the screen, then let it exit."""
    terminal.wait_for("stand-in editor")
    (tmp_path / "editor-seen").touch()


def test_enter_on_a_source_line_opens_it_in_the_editor_and_comes_back(terminal, tmp_path):
    """Issue 29, point 5: $EDITOR, a stand-in that records its arguments, is handed the
    terminal with +LINE FILE (the file found beside where the app runs), and the app
    comes back after it."""
    trace = Path(__file__).parent / "data" / "resnet50_2021_cuda.pt.trace.json.gz"
    (tmp_path / "resnet50_profiler_api.py").write_text("# the script the trace names\n")
    editor, said = stand_in_editor(tmp_path)
    done = tmp_path / "exit-code"
    command = (
        f"cd {tmp_path} && env -u COLUMNS -u LINES EDITOR='{sys.executable} {editor}' "
        f"{sys.executable} -m torchscan_tui {trace}; echo $? > {done}"
    )
    terminal.start(command)
    terminal.wait_for("Peak RSS")
    terminal.wait_for("Details")  # the rows are in and the table has the keys
    terminal.keys("L")
    terminal.wait_for("Source lines")
    terminal.keys("Enter")
    editor_seen(terminal, tmp_path)  # the editor has the terminal
    terminal.wait_for("Source lines")  # and the app has it back
    assert json.loads(said.read_text()) == ["+42", str(tmp_path / "resnet50_profiler_api.py")]
    terminal.keys("Escape")
    terminal.wait_until_gone("Source lines")
    terminal.keys("q")
    deadline = time.monotonic() + 10
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"


def test_a_live_runs_top_line_and_a_module_open_in_the_editor(terminal, tmp_path):
    """Issue 29, points 1, 4 and 5 on a live run of a training script: L's top line is
    the MLP's line of the model (traced in the step after the window), enter opens it;
    T's tree opens a block's forward with e."""
    transformer = Path(__file__).resolve().parent.parent / "sample_workloads" / "transformer.py"
    lines = transformer.read_text().splitlines()
    mlp_line = next(n for n, line in enumerate(lines, 1) if "self.down(" in line)
    block_forward = next(n for n, line in enumerate(lines, 1) if "x + self.attention(" in line) - 1
    editor, said = stand_in_editor(tmp_path)
    command = (
        f"cd {tmp_path} && env -u COLUMNS -u LINES EDITOR='{sys.executable} {editor}' "
        f"{sys.executable} -m torchscan_tui {WORKLOADS / 'train_transformer.py'}"
    )
    terminal.start(command)
    terminal.wait_for(" done", timeout=120)  # both passes
    terminal.wait_for("Details")  # the table has the keys
    terminal.keys("L")
    terminal.wait_for("Source lines")
    terminal.keys("Enter")
    editor_seen(terminal, tmp_path)
    terminal.wait_for("Source lines")
    assert json.loads(said.read_text()) == [f"+{mlp_line}", str(transformer)]
    terminal.keys("Escape")
    terminal.wait_until_gone("Source lines")
    terminal.keys("T")
    terminal.wait_for("CPU time by nn.Module")
    terminal.keys("Down", "Down")  # the step, the model, its first block
    terminal.wait_for(": Block:")  # the status line names the highlighted block
    said.unlink()
    terminal.keys("e")
    editor_seen(terminal, tmp_path)
    terminal.wait_for("CPU time by nn.Module")
    assert json.loads(said.read_text()) == [f"+{block_forward}", str(transformer)]
    terminal.keys("Escape")
    terminal.wait_until_gone("CPU time by nn.Module")
    said.unlink()
    # An op of the model's first: the rows' order is by measured time, and the optimizer's
    # step (called from the script, not the model) is first in some runs.
    terminal.keys("/")
    terminal.wait_until_gone("Details")
    terminal.keys("-l", "aten::addmm")
    terminal.wait_for("filter “aten::addmm”")
    terminal.keys("Escape")
    terminal.wait_for("Details")
    terminal.keys("E")  # the highlighted row's (the first addmm's) largest call site
    editor_seen(terminal, tmp_path)
    terminal.wait_for("Details")
    line, path = json.loads(said.read_text())
    assert path == str(transformer) and line.startswith("+")
    terminal.keys("q")


def test_a_big_saved_report_shows_its_first_page_then_every_row(terminal, tmp_path):
    """A report over 8 MiB in a real terminal: opened from its ends, its first rows paint,
    the rest are read from the file held open, and the status counts every row."""
    path = saved(tmp_path / "big.json", rows_of(11_000))
    terminal.start(f"env -u COLUMNS -u LINES {sys.executable} -m torchscan_tui {path}")
    terminal.wait_for("op00000")
    terminal.wait_for("11,000 of 11,000", timeout=60)
    terminal.keys("/")
    terminal.wait_until_gone("Details")
    terminal.keys("-l", "op10999")
    screen = terminal.wait_for("filter “op10999”")
    assert "1 of 11,000" in screen and "op10999" in screen


def test_a_big_trace_is_read_in_the_app_and_its_rows_come_as_it_is(tmp_path):
    """A 125 MB trace (a real A100 trace's events four times over): the app is up while
    it is read, saying how far; the first part's rows come with their note while it
    still is (on this machine: at ~45% of the file; a machine twice as fast reads past
    LATE_SHARE first and shows none), then every row, done, with no early note."""
    from benchmarks.big_trace import clone_trace

    path = tmp_path / "big.pt.trace.json"
    clone_trace(4, path)
    rows = len(open_profile(path)[0]["operators"])
    terminal = Terminal(220, 32)  # the header says the device, its time and the phase
    try:
        terminal.start(f"env -u COLUMNS -u LINES {sys.executable} -m torchscan_tui {path}")
        screen = terminal.wait_for("reading the trace", timeout=30, interval=0.05)
        assert "grouped operators" not in screen, "the app is up before a row is"
        early = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            screen = terminal.screen()
            if "early_rows" in screen and early is None:
                early = screen
            if f"{rows:,} of {rows:,}" in screen and "done" in screen:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the trace's rows never came whole:\n{screen}")
    finally:
        terminal.close()
    assert "early_rows" not in screen
    if early is not None:  # the first part's rows, read while the rest was
        assert "reading the trace" in early and "grouped operators" in early
