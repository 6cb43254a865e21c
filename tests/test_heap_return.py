"""common/memory.py: freed memory goes back to the system (glibc), in fresh processes."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from torchscan_tui.formats import opening

# A big trace's pieces, in small: a 16 MiB block freed (glibc then raises its mmap
# threshold to 16 MiB), then an 8 MiB one made and freed. How much the process still
# holds of it is printed, in KiB.
PIECES = """
import sys
from torchscan_tui.common.memory import map_large_blocks
if sys.argv[1] == "fixed":
    map_large_blocks()
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
big = b"x" * (16 << 20)
del big
before = rss()
piece = b"y" * (8 << 20)
del piece
print(rss() - before)
"""


def held_kib(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PIECES, mode], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return int(done.stdout)


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's heap"
)
def test_a_freed_piece_is_given_back_once_the_threshold_is_fixed():
    """What the trace reader relies on: with the threshold left to glibc, the 8 MiB
    piece stays held after it is freed (the case the fix is for: this test tells the two
    apart); fixed at 1 MiB, it is given back."""
    assert held_kib("default") > 4 * 1024
    assert held_kib("fixed") < 1024


def test_reading_a_trace_fixes_the_threshold_first(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(opening, "map_large_blocks", lambda: calls.append("fixed"))
    opening.open_profile(Path(__file__).parent / "data" / "cuda_trace_excerpt.json")
    assert calls == ["fixed"]
