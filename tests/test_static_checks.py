"""The package type-checks and lints clean, as the README's test command runs it.

mypy checks the typed vocabulary (``Row``, ``Report``, ``Phase``...) where the code is
used, not only where it is declared: a field spelt wrong or a ``None`` read as a number
is an error here, not a crash in a widget later. ruff holds the style and import order.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run_tool(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, cwd=ROOT, timeout=600
    )


def test_mypy_is_clean():
    result = run_tool("mypy", "--no-incremental")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_ruff_lints_clean():
    result = run_tool("ruff", "check", "torchscan_tui", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_kept():
    result = run_tool("ruff", "format", "--check", "torchscan_tui", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr
