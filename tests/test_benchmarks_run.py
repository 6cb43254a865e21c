"""Each benchmark still runs, on a tiny input (the figures are docs/performance.md's):
the stream benchmark once broke unnoticed when the channel lost its json fallback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "argv",
    [
        ["benchmarks.stream", "--rows", "300", "--repeats", "1"],
        ["benchmarks.trace_open", "--events", "2000", "--repeats", "1"],
        ["benchmarks.aggregation", "--events", "2000", "--repeats", "1"],
        ["benchmarks.table", "--rows", "300", "--repeats", "1"],
        ["benchmarks.report_open", "--rows", "300", "--repeats", "1"],  # in tmux: keys too
        ["benchmarks.big_trace", "--copies", "0.05", "--no-refs"],  # its stages too
        ["benchmarks.window_memory", "--ops", "400", "--steps", "1"],  # and torch's floor
    ],
)
def test_a_benchmark_runs_on_a_tiny_input(argv):
    done = subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ours" in done.stdout or "ratio" in done.stdout, done.stdout
