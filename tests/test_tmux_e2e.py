"""The real command in a real terminal: launch, filter, select, export a CSV, quit.

Driven with tmux send-keys and read with capture-pane, as a person would see it.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import WORKLOADS

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


class Terminal:
    def __init__(self, width: int, height: int):
        self.name = f"torchscan-{uuid.uuid4().hex[:8]}"
        self.socket = f"torchscan-test-{self.name}"
        self.size = (width, height)

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

    def start(self, command: str) -> None:
        width, height = self.size
        self.tmux(
            "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), command
        )

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def wait_for(self, text: str, timeout: float = 120) -> str:
        """Poll the screen until ``text`` shows (a terminal has no event to wait on)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared; screen was:\n{self.screen()}")

    def wait_until_gone(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text not in self.screen():
                return
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never went away; screen was:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


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
    terminal.wait_for("Wrote 1 row(s)")
    rows = list(csv.DictReader(out.open()))
    assert [row["operator"] for row in rows] == ["aten::mm"]
    assert rows[0]["input_shapes"] == "[[8, 16], [16, 64]]"
    terminal.keys("q")
    deadline = time.monotonic() + 10
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"
    assert not any(Path(tmp_path).glob(".picked.csv.*"))
