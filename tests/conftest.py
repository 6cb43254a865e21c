"""Shared fixtures: paths to the sample and test workloads, and the interpreter to use."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_workloads"
WORKLOADS = Path(__file__).resolve().parent / "workloads"
PRIVATE_TMPDIR = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """A temporary directory of this test run's own (``TMPDIR``, inherited by every process
    a test starts): tests that count the app's private folders are not misled by another
    run on the machine, and nothing a test leaves outlives the run."""
    private = tempfile.mkdtemp(prefix="torchscan-tests-")
    os.environ["TMPDIR"] = private
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    config.stash[PRIVATE_TMPDIR] = private


def pytest_unconfigure(config: pytest.Config) -> None:
    private = config.stash.get(PRIVATE_TMPDIR, None)
    if private is not None:
        shutil.rmtree(private, ignore_errors=True)


@pytest.fixture
def trace_in_pieces(tmp_path, monkeypatch) -> Path:
    """A real CUDA trace (kernels, runtime calls, shapes), inflated, read in ~40 pieces
    of 8 KiB from reads of 32 KiB: the first piece comes with a tenth of the file read
    (formats/trace/stream.py, formats/early_rows.py)."""
    from torchscan_tui.formats import jsonio
    from torchscan_tui.formats.trace import stream

    path = tmp_path / "alexnet.pt.trace.json"
    source = Path(__file__).parent / "data" / "alexnet_cuda.json.gz"
    path.write_bytes(gzip.decompress(source.read_bytes()))
    monkeypatch.setattr(stream, "BATCH_BYTES", 8 << 10)
    monkeypatch.setattr(stream, "BOUNDARY_WINDOW", 2 << 10)
    monkeypatch.setattr(jsonio, "STREAM_CHUNK", 32 << 10)
    return path


@pytest.fixture
def small_pieces(monkeypatch) -> None:
    """Pieces of 16 KiB, read 4 KiB at a time: every test trace is read in tens to
    hundreds of them (formats/trace/stream.py)."""
    from torchscan_tui.formats import jsonio
    from torchscan_tui.formats.trace import stream

    monkeypatch.setattr(jsonio, "STREAM_CHUNK", 4 << 10)
    monkeypatch.setattr(stream, "BATCH_BYTES", 16 << 10)
    monkeypatch.setattr(stream, "BOUNDARY_WINDOW", 4 << 10)


@pytest.fixture
def split_any_size(monkeypatch, small_pieces) -> None:
    """Every plain trace file is split in two halves (formats/trace/halves.py), each
    read in several small pieces."""
    from torchscan_tui.formats.trace import halves

    monkeypatch.setattr(halves, "SPLIT_FROM_BYTES", 0)
    monkeypatch.setattr(halves, "STREAM_CHUNK", 4 << 10)  # each half's reads


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def workloads() -> Path:
    return WORKLOADS


@pytest.fixture
def samples() -> Path:
    return SAMPLES


def torchscan(
    *argv, cwd=None, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``torchscan-tui ARGV`` as a real process (no terminal: stdin is not a tty);
    ``env``: variables added to this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "torchscan_tui", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        env=None if env is None else {**os.environ, **env},
    )


def assert_refused_in_one_line(open_file, path: Path, message: str) -> None:
    """``open_file(path)`` refuses the file with a ReportError matching ``message``: one
    line, naming the file (what a user sees instead of a traceback)."""
    from torchscan_tui.formats.report import ReportError

    with pytest.raises(ReportError, match=message) as caught:
        open_file(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
