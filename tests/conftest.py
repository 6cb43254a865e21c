"""Shared fixtures: paths to the sample and test workloads, and the interpreter to use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_workloads"
WORKLOADS = Path(__file__).resolve().parent / "workloads"


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def workloads() -> Path:
    return WORKLOADS


@pytest.fixture
def samples() -> Path:
    return SAMPLES


def torchscan(*argv, cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``torchscan-tui ARGV`` as a real process (no terminal: stdin is not a tty)."""
    return subprocess.run(
        [sys.executable, "-m", "torchscan_tui", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def assert_refused_in_one_line(open_file, path: Path, message: str) -> None:
    """``open_file(path)`` refuses the file with a ReportError matching ``message``: one
    line, naming the file (what a user sees instead of a traceback)."""
    from torchscan_tui.formats.report import ReportError

    with pytest.raises(ReportError, match=message) as caught:
        open_file(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
