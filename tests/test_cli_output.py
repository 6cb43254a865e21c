"""What the command prints is safe to print: no controls from outside text, and a reader
that goes away (``| head``) ends it quietly (issue 16, points 2 and 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
OSC_TITLE = "\x1b]2;pwned\x07"


def _run(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchscan_tui", *argv],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, **kwargs,
    )  # fmt: skip


@pytest.mark.slow
def test_a_closed_pipe_ends_the_output_quietly():
    """``torchscan-tui trace | head``: the reader is gone before the rows are printed
    (``head`` gone early; the race the issue saw 2 times in 5, made certain)."""
    for _ in range(2):
        child = subprocess.Popen(
            [sys.executable, "-m", "torchscan_tui", str(DATA / "trace_diff_control.json.gz")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        child.stdout.close()
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        assert b"Traceback" not in err and b"BrokenPipe" not in err


def test_one_line_errors_show_controls_as_text(tmp_path):
    missing = tmp_path / f"w{OSC_TITLE}.py"
    done = _run(str(missing))
    assert done.returncode != 0
    assert "\x1b" not in done.stderr and "\\x1b]2;pwned" in done.stderr


def test_rows_and_notes_printed_without_a_terminal_show_controls_as_text(tmp_path):
    event = {"ph": "X", "cat": "cpu_op", "name": f"op{OSC_TITLE}", "tid": 1, "ts": 1, "dur": 2}
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [event]}))
    done = _run(str(trace))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "op\\x1b]2;pwned" in done.stdout
    compared = _run("--compare", str(trace), str(trace))
    assert "\x1b" not in compared.stdout and "\\x1b]2;pwned" in compared.stdout
