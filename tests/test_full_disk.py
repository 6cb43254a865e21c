"""A full disk is no failure of the workload (issue 16, point 15): a real tmpfs filled up.

Mounting needs root and a kernel that lets the sandbox mount tmpfs; elsewhere the tests
skip and say why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.session import Session

pytestmark = pytest.mark.slow  # real workloads: seconds each

# Its trace (~200 KiB) is far more than the room left on the disk.
WORKLOAD = (
    "import torch\ndef workload():\n    for _ in range(300):\n"
    "        torch.ones(4, 4).mm(torch.ones(4, 4))\n"
)
ROOM_LEFT = 16 << 10  # enough for Python's probe of TMPDIR and the run's lock file


@pytest.fixture
def full_disk(tmp_path):
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        filler = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(filler, b"\0" * 4096):
                pass
        except OSError:  # full: what this fixture is for
            pass
        finally:
            os.close(filler)
        os.truncate(mount / "filler", os.path.getsize(mount / "filler") - ROOM_LEFT)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_an_explicit_trace_onto_a_full_disk_says_so_and_keeps_the_rows(tmp_path, full_disk):
    (tmp_path / "w.py").write_text(WORKLOAD)
    done = subprocess.run(
        [sys.executable, "-m", "torchscan_tui", "w.py", "--json", "r.json",
         "--trace", str(full_disk / "t.json")],
        capture_output=True, text=True, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "no space left on device" in done.stderr.splitlines()[-1]
    report = json.loads((tmp_path / "r.json").read_text())
    assert any(row["operator"] == "aten::mm" for row in report["operators"])
    assert report["trace_path"] is None


def test_the_apps_own_trace_copy_on_a_full_tmpdir_is_no_failure(tmp_path, full_disk):
    """The app keeps a private trace in TMPDIR for ``t``: the run is done, the trace
    unavailable, and a note says why."""
    script = tmp_path / "w.py"
    script.write_text(WORKLOAD)
    environ = dict(os.environ, TMPDIR=str(full_disk))
    old = dict(os.environ)
    os.environ.update(environ)
    try:
        import tempfile

        tempfile.tempdir = None  # read TMPDIR again
        finished = Session(RunConfig(script=str(script), private_trace=True), lambda e: None).run()
    finally:
        os.environ.clear()
        os.environ.update(old)
        tempfile.tempdir = None
    assert finished.outcome == "done", finished.message
    codes = [note["code"] for note in finished.report["diagnostics"]]
    assert "trace_unavailable" in codes
    note = next(n for n in finished.report["diagnostics"] if n["code"] == "trace_unavailable")
    assert "no space left on device" in note["message"]
    assert Path(full_disk).exists()
