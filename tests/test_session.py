"""Session with a fake worker: the real RSS child and launcher, then a stand-in for the
torch worker that speaks the channel protocol (no torch), so the session's handling of
every message order is tested in a second, not a profile's time."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.events import (
    PhaseChanged,
    ProfileMeta,
    RowsReceived,
    RssMeasured,
    RunFinished,
)
from torchscan_tui.run.session import Session

FAKE_WORKER = """
import json, os, sys
args = sys.argv[1:]
fd = int(args[args.index("--channel-fd") + 1])
def send(message):
    os.write(fd, (json.dumps(message) + "\\n").encode())
row = {"operator": "aten::mm", "input_shapes": [[2, 2]], "calls": 1,
       "cpu_self_seconds": 0.5, "device_self_seconds": None, "cpu_net_bytes": 0}
script = SCRIPT
send({"type": "phase", "phase": "profiling"})
send({"type": "meta", "head": {"context": {"device": "cpu", "total_grouped_operators": 3},
       "diagnostics": [], "kernels": [], "totals": {}, "trace_path": None}})
for line in script:
    if line == "rows":
        send({"type": "rows", "rows": [row, dict(row, operator="aten::add")]})
    elif line == "forged":
        os.write(fd, b'{"type": "rows", "rows": [{"operator": 7}]}\\n')
    elif line == "done":
        send({"type": "done"})
    elif line == "exit":
        sys.exit(3)
"""


def fake_python(tmp_path: Path, script: list[str]) -> str:
    """A ``python`` that runs the workload (and the peak pass) for real and the worker
    (``-m torchscan_tui.worker``) as the fake above, following ``script``."""
    worker = tmp_path / "fake_worker.py"
    worker.write_text(FAKE_WORKER.replace("SCRIPT", repr(script), 1))
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "-m" ] && [ "$2" = "torchscan_tui.worker" ]; then shift 2; '
        f'exec {sys.executable} {worker} "$@"; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return str(python)


def run_session(tmp_path: Path, script: list[str]) -> list:
    workload = tmp_path / "work.py"
    workload.write_text("print('hello')\n")
    config = RunConfig(script=str(workload), python=fake_python(tmp_path, script))
    events: list = []
    session = Session(config, events.append)
    try:
        session.run()
    finally:
        session.cleanup()
    return events


def kinds(events: list) -> list[str]:
    return [type(event).__name__ for event in events if not type(event).__name__ == "OutputLine"]


def test_a_whole_run_reports_each_phase_the_peak_the_rows_and_done(tmp_path):
    events = run_session(tmp_path, ["rows", "done"])
    names = kinds(events)
    # The profile first (rows within seconds), then the peak pass.
    assert names[0] == "PhaseChanged" and events[0] == PhaseChanged("profiling")
    assert names.index("ProfileMeta") < names.index("RowsReceived") < names.index("RssMeasured")
    assert events.index(PhaseChanged("measuring")) > names.index("RowsReceived")
    assert names[-1] == "RunFinished"
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.outcome == "done"
    rows = [row for e in events if isinstance(e, RowsReceived) for row in e.rows]
    assert [row["operator"] for row in rows] == ["aten::mm", "aten::add"]
    assert finished.report["operators"] == rows
    rss = next(e for e in events if isinstance(e, RssMeasured))
    assert rss.rss["value"] > 0  # the real child's kernel figure
    assert any(isinstance(e, ProfileMeta) for e in events)


@pytest.mark.parametrize(
    ("script", "words"),
    [
        (["rows"], "no complete result"),  # the channel ended with neither done nor error
        (["rows", "forged"], "carried a message"),  # a message that is not ours
        (["rows", "exit"], "exit"),  # the worker died
    ],
)
def test_a_broken_channel_fails_the_run_and_keeps_the_rows_before(tmp_path, script, words):
    events = run_session(tmp_path, script)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.outcome == "failed" and not finished.complete
    assert words in finished.message and "2 rows received" in finished.message
    assert [row["operator"] for row in finished.report["operators"]] == ["aten::mm", "aten::add"]
