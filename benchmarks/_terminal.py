"""A real terminal for the end-to-end tests and benchmarks: a detached tmux session.

Driven with ``send-keys`` and read with ``capture-pane``: what a person would see. Start
commands under ``env -u COLUMNS -u LINES`` when the caller (pytest) exports those, or
they override the pane's real size.
"""

from __future__ import annotations

import subprocess
import time
import uuid


class Terminal:
    """A detached tmux session of a given size, on its own server socket."""

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

    def styled_screen(self) -> str:
        """The screen with its colours, as escape sequences (``capture-pane -e``)."""
        return self.tmux("capture-pane", "-p", "-e", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def wait_for(self, text: str, timeout: float = 120, interval: float = 0.2) -> str:
        """Poll the screen until ``text`` shows (a terminal has no event to wait on)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(interval)
        raise AssertionError(f"{text!r} never appeared; screen was:\n{self.screen()}")

    def wait_until_gone(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text not in self.screen():
                return
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never went away; screen was:\n{self.screen()}")

    def steady(self, read, settle: float = 0.3, timeout: float = 30) -> str:
        """``read(screen)`` once it has stayed the same for ``settle`` seconds: what the
        app shows once it is done redrawing (after a resize, a recompose of the footer)."""
        deadline = time.monotonic() + timeout
        last, since = read(self.screen()), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = read(self.screen())
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= settle:
                return now
        raise AssertionError(f"the screen never settled; it was:\n{self.screen()}")

    def pane_pid(self) -> int:
        """The pid of the pane's process (the command, when it was started with exec)."""
        return int(self.tmux("display-message", "-p", "-t", self.name, "#{pane_pid}"))

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
