"""Issue 31: a window recorded as one profiler session per step, each read and let go.

A window of three op-dense steps (1.19M events) took the worker to 4.96 GB, torch's own
results for every event held at once; with a session per step it peaks at 1.90 GB
(benchmarks/window_memory.py). Real torch throughout: the sessions' rows, steps, memory
and merged trace against what the window's steps did, and torch's results let go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import weakref
from collections import Counter

import pytest
import torch
from conftest import torchscan

from torchscan_tui.analysis.profiler_events import STEP_END, STEP_START, WINDOW_START
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.run.private_dir import LOCK_NAME, NEWBORN_SECONDS
from torchscan_tui.worker import step_sessions, window_memory
from torchscan_tui.worker.profiling import WorkloadError, profile_workload
from torchscan_tui.worker.step_sessions import SessionHarvest, merge_traces
from torchscan_tui.worker.steps import StepWindow, call_steps
from torchscan_tui.worker.window_memory import (
    HELD_PER_RECORDED,
    SESSION_PEAK_PER_RECORDED,
    WindowMemory,
)

MB = 1 << 20
ADDS_PER_STEP = 50


@pytest.fixture(autouse=True)
def a_session_per_step(monkeypatch):
    """Sessions are read once they record SESSION_BYTES (16 MiB: ~60k events); these
    steps are small, so each step is made a session of its own."""
    monkeypatch.setattr(window_memory, "SESSION_BYTES", 0)


def a_step() -> None:
    y = torch.ones(16, 16)
    for _ in range(ADDS_PER_STEP):
        y = y + 1
    torch.mm(y, y)


def windowed(steps: int, **kwargs):
    window = StepWindow(1, steps)
    return profile_workload(call_steps(a_step, window), window=window, call_sites=False, **kwargs)


def test_each_step_is_its_own_session_and_the_rows_hold_every_step(tmp_path, monkeypatch):
    taken = []
    original = SessionHarvest.take

    def take(self, profile):
        taken.append(weakref.ref(profile.profiler.kineto_results))
        original(self, profile)

    monkeypatch.setattr(SessionHarvest, "take", take)
    report = windowed(3)
    assert len(taken) == 3  # two between the steps, the last once the window is closed
    calls = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls["aten::mm"] == 3 and calls["aten::add"] == 3 * ADDS_PER_STEP
    steps = report["context"]["steps"]
    assert steps["profiled"] == 3 and len(steps["step_seconds"]) == 3
    spread = next(r for r in report["operators"] if r["operator"] == "aten::mm")
    assert spread["cpu_self_seconds_per_step"]["steps"] == 3
    # torch's results of each session are gone once it is read (a cycle held them to
    # the next full collection: 1.1 GB at 396k events)
    assert all(ref() is None for ref in taken)


def test_the_time_taken_to_read_a_step_is_no_steps(monkeypatch):
    """The next session starts after the last was read (seconds, for big steps): each
    step is timed from its own session's start marker, not from the step end before."""
    original = SessionHarvest.take

    def slow_take(self, profile):
        original(self, profile)
        time.sleep(0.6)

    monkeypatch.setattr(SessionHarvest, "take", slow_take)
    report = windowed(3)
    seconds = report["context"]["steps"]["step_seconds"]
    assert len(seconds) == 3 and max(seconds) < 0.5, seconds
    overview = report["overview"]
    assert overview is not None
    assert all(step["seconds"] < 0.5 for step in overview["steps"]), overview["steps"]


def test_the_merged_trace_is_every_sessions_and_reopens_to_the_same_rows(tmp_path):
    trace = tmp_path / "window.json"
    report = windowed(3, trace_path=trace)
    assert report["trace_path"] == str(trace)
    assert oct(os.stat(trace).st_mode & 0o777) == oct(0o600)
    document = json.loads(trace.read_text())
    assert document["traceName"] == str(trace)
    names = Counter(event.get("name") for event in document["traceEvents"])
    assert names[WINDOW_START] == 1 and names[STEP_END] == 2 and names[STEP_START] == 2
    assert names["aten::mm"] == 3 and names["aten::add"] == 3 * ADDS_PER_STEP
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".torchscan-steps-")]
    reopened, _ = open_profile(trace)
    calls = Counter()
    for row in reopened["operators"]:
        calls[row["operator"]] += row["calls"]
    assert calls["aten::mm"] == 3 and calls["aten::add"] == 3 * ADDS_PER_STEP


def test_the_memory_timeline_holds_every_sessions_allocations():
    report = windowed(3)
    memory = report["memory"]
    assert memory is not None
    (cpu,) = [d for d in memory["devices"] if d["device"] == "cpu"]
    # each step's 51 results of 16x16 floats: allocated in each session, all three seen
    assert cpu["allocations"] >= 3 * (ADDS_PER_STEP + 1), cpu


def test_pieces_merge_in_order_with_the_first_pieces_fields(tmp_path):
    pieces = []
    for index, events in enumerate(([{"name": "a", "ts": 1}], [], [{"name": "b", "ts": 2}])):
        piece = tmp_path / f"p{index}.json"
        fields = {"schemaVersion": 1, "traceName": str(piece), "baseTimeNanoseconds": index}
        piece.write_text(json.dumps({**fields, "traceEvents": events}))
        pieces.append(piece)
    merged = tmp_path / "merged.json"
    with open(merged, "wb") as out:
        merge_traces(pieces, out, merged)
    document = json.loads(merged.read_text())
    assert document["traceEvents"] == [{"name": "a", "ts": 1}, {"name": "b", "ts": 2}]
    assert document["schemaVersion"] == 1 and document["baseTimeNanoseconds"] == 0
    assert document["traceName"] == str(merged)


def test_small_steps_share_a_session_until_it_has_recorded_enough(monkeypatch):
    monkeypatch.setattr(window_memory, "SESSION_BYTES", 64 * MB)  # the readings: 40, then 80 MB
    taken = []
    original = SessionHarvest.take
    monkeypatch.setattr(
        SessionHarvest, "take", lambda self, p: (taken.append(1), original(self, p))
    )
    report = windowed(3)  # three small steps: one session, no pause between them
    assert taken == [] and report["context"]["steps"]["profiled"] == 3
    readings = iter([0, 40 * MB, 80 * MB, 82 * MB, 122 * MB])
    memory = WindowMemory(None, "test", lambda: next(readings), per_step_sessions=True)
    memory.window_opens()
    memory.step_done()
    assert not memory.session_full()  # 40 MB recorded
    memory.step_done()
    assert memory.session_full()  # 80 MB
    memory.session_taken()
    memory.step_done()
    assert memory.recorded == 120 * MB and not memory.session_full()  # 40 MB in the new one


def test_a_session_per_step_projects_one_step_read_beside_the_others_held():
    readings = iter([0, 10 * MB, 12 * MB, 22 * MB, 24 * MB, 34 * MB])
    memory = WindowMemory(None, "test", lambda: next(readings), per_step_sessions=True)
    memory.window_opens()
    memory.step_done()  # 10 MB recorded in the first session
    memory.session_taken()  # its events hold 12 MB
    memory.step_done()  # the second session recorded 10 MB more
    assert memory.recorded == 20 * MB and memory.held == 12 * MB
    expected = (2 * HELD_PER_RECORDED + SESSION_PEAK_PER_RECORDED) * 10 * MB
    assert memory._peak_with(3, 2) == expected
    memory.budget = int(expected) - 1
    assert not memory.room_for_another(2) and memory.cut_after == 2


def test_a_trace_that_cannot_be_written_leaves_the_rows_and_says_why(tmp_path, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(step_sessions.SessionHarvest, "write_piece", full_disk)
    report = windowed(2, trace_path=tmp_path / "t.json")
    assert report.get("trace_path") is None
    assert any(n["code"] == "trace_unavailable" for n in report["diagnostics"])
    assert {row["operator"] for row in report["operators"]} >= {"aten::mm", "aten::add"}


def test_the_header_says_collecting_while_a_session_is_read_then_the_step_again():
    said = []
    window = StepWindow(0, 3, on_step=lambda done, of: said.append(("step", done, of)))
    window.on_reading = lambda: said.append(("collecting",))
    profile_workload(call_steps(a_step, window), window=window, call_sites=False)
    assert said == [("step", 1, 3), ("collecting",), ("step", 1, 3),
                    ("step", 2, 3), ("collecting",), ("step", 2, 3),
                    ("step", 3, 3)]  # fmt: skip


@pytest.mark.slow
def test_the_command_reads_a_big_window_in_sessions_and_its_trace_reopens_to_its_rows(
    workloads, tmp_path
):
    """The real command on steps of 9000 small ops (~99k events, ~28 MB recorded: past
    SESSION_BYTES, so a session per step), with its trace: the rows hold every step, the
    steps are timed without the reads between them, and the merged trace reopens to the
    same calls."""
    no_budget = {"TORCHSCAN_WORKER_MEMORY": "1T"}  # measure, never cut
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    result = torchscan(workloads / "op_dense.py", "--json", out, "--trace", trace,
                       "--warmup", "1", "--steps", "3", "--rss-steps", "1", "--",
                       "--ops", "9000", "--steps", "5", env=no_budget)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("collecting its events") >= 2  # between steps, and at the end
    report = json.loads(out.read_text())
    calls = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls["Optimizer.step#SGD.step"] == 3 and calls["AddBackward0"] == 3 * 9000
    steps = report["context"]["steps"]
    assert steps["profiled"] == 3 and steps["memory"]["recorded_bytes"] > 2 * 16 * MB
    names = Counter(e.get("name") for e in json.loads(trace.read_text())["traceEvents"])
    assert names[STEP_START] == 2  # three sessions
    again = torchscan(trace, "--json", tmp_path / "again.json")
    assert again.returncode == 0, again.stderr
    reopened = json.loads((tmp_path / "again.json").read_text())["operators"]
    by_name = Counter()
    for row in reopened:
        by_name[row["operator"]] += row["calls"]
    assert by_name["Optimizer.step#SGD.step"] == 3 and by_name["AddBackward0"] == 3 * 9000


def test_an_event_tree_that_cannot_be_read_leaves_no_timeline_and_no_error(monkeypatch):
    """A session is read inside the script's step end: torch's event tree failing there
    (another torch version) must not raise into the script."""
    import torchscan_tui.worker.allocations as allocations

    def unreadable(*args):
        raise RuntimeError("no tree in this torch")

    monkeypatch.setattr(allocations, "allocations_of", unreadable)
    report = windowed(3)
    assert report["memory"] is None and report["context"]["steps"]["profiled"] == 3


def test_a_rank_of_a_job_keeps_one_session_for_its_window(monkeypatch):
    """A rank reading a session between two steps would hold the other ranks in their
    next collective: that wait would read as their communication time, and the straggler
    named would be ours. A job's ranks keep one session."""
    taken = []
    original = SessionHarvest.take
    monkeypatch.setattr(
        SessionHarvest, "take", lambda self, profile: (taken.append(1), original(self, profile))
    )
    monkeypatch.setenv("WORLD_SIZE", "2")
    report = windowed(3)
    assert taken == [] and report["context"]["steps"]["profiled"] == 3
    monkeypatch.setenv("WORLD_SIZE", "1")
    windowed(2)
    assert taken == [1, 1]


def test_a_process_group_of_several_made_by_the_script_keeps_one_session_too_faked_group(
    monkeypatch,
):
    """mp.spawn jobs set no WORLD_SIZE: the script's own group says it. A group of two
    cannot be made in one process, so torch.distributed is faked for the decision alone
    (faked during a profile, torch's own profiler asks it for a rank); the two-rank jobs
    of test_ranks.py run for real under torchrun."""
    import sys
    import types

    from torchscan_tui.worker.step_sessions import one_process_job

    def group_of(size: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                                     get_world_size=lambda: size)  # fmt: skip

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert one_process_job()
    monkeypatch.setitem(sys.modules, "torch.distributed", group_of(2))
    assert not one_process_job()
    monkeypatch.setitem(sys.modules, "torch.distributed", group_of(1))
    assert one_process_job()
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert not one_process_job()


def test_a_step_that_raises_after_a_session_was_read_keeps_the_steps_before(monkeypatch):
    calls = []

    def raises_on_the_third_window_step() -> None:
        calls.append(1)
        if len(calls) == 4:  # the warm-up step, then two window steps, then this one
            raise ValueError("a bad batch")
        a_step()

    window = StepWindow(1, 5)
    with pytest.raises(WorkloadError) as raised:
        profile_workload(call_steps(raises_on_the_third_window_step, window), window=window,
                         call_sites=False)  # fmt: skip
    report = raised.value.report
    calls_of = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls_of["aten::mm"] == 2 and calls_of["aten::add"] == 2 * ADDS_PER_STEP
    assert report["context"]["steps"]["profiled"] == 2


def test_each_sessions_correlation_ids_stay_its_own_mock_gpu():
    """Kernels link to their launches by correlation id, and the sessions' events are
    grouped together: ids are moved per session so that one session's kernel can never
    link to another's launch, were the device's ids to repeat. No GPU here: the events
    are made as a CUDA profile's would be (the launch's id, the kernel's link to it)."""
    from types import SimpleNamespace

    from torchscan_tui.analysis.profiler_events import RawEvent

    assert RawEvent._fields[6:8] == ("correlation_id", "linked_correlation_id")

    def session(start: int) -> list[RawEvent]:  # the same ids in every session
        return [
            RawEvent("aten::mm", "CPU", False, 1, start, start + 10, 7, 0, []),
            RawEvent("cudaLaunchKernel", "CPU", False, 1, start + 1, start + 2, 42, 7, []),
            RawEvent("gemm", "CUDA", False, 9, start + 3, start + 8, 42, 7, []),
            RawEvent("aten::relu", "CPU", False, 1, start + 11, start + 12, 0, 0, []),
        ]

    harvest = SessionHarvest(lambda results: results, None, lambda *args: False)
    for start in (0, 100):
        harvest.take(SimpleNamespace(profiler=SimpleNamespace(kineto_results=session(start))))
    events = harvest.events()
    first, second = events[:4], events[4:]
    assert [(e.correlation_id, e.linked_correlation_id) for e in first] == [
        (7, 0), (42, 7), (42, 7), (0, 0)]  # fmt: skip
    moved = step_sessions.SESSION_ID_STRIDE
    assert [(e.correlation_id, e.linked_correlation_id) for e in second] == [
        (7 + moved, 0), (42 + moved, 7 + moved), (42 + moved, 7 + moved), (0, 0)]  # fmt: skip
    assert [e.name for e in events] == [e.name for e in session(0) + session(100)]
    assert [e.start_ns for e in second] == [e.start_ns for e in session(100)]


KILLED_IN_ITS_WINDOW = """
import os, signal, sys
import torch
from torchscan_tui.worker import window_memory
from torchscan_tui.worker.profiling import profile_workload
from torchscan_tui.worker.steps import StepWindow, call_steps

window_memory.SESSION_BYTES = 0  # a session per step: a piece written at each step end
window = StepWindow(1, 4)
steps = 0

def step():
    global steps
    steps += 1
    if steps == 4:  # two window steps read and written aside: killed, no chance to tidy
        os.kill(os.getpid(), signal.SIGKILL)
    torch.mm(torch.ones(8, 8), torch.ones(8, 8))

profile_workload(call_steps(step, window), window=window, call_sites=False,
                 trace_path=sys.argv[1])
"""


def test_the_pieces_of_a_worker_killed_in_its_window_are_swept_by_the_next_trace(tmp_path):
    """``--trace PATH``: a window's pieces wait beside PATH; a worker killed outright (the
    OOM killer, say) cannot remove them, so the next trace written there sweeps them."""
    trace = tmp_path / "window.json"
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_ITS_WINDOW, str(trace)],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    (left,) = [p for p in tmp_path.iterdir() if p.name.startswith(step_sessions.PIECES_PREFIX)]
    assert sorted(p.name for p in left.iterdir()) == [LOCK_NAME, "step-0.json", "step-1.json"]
    assert not trace.exists()
    past = time.time() - NEWBORN_SECONDS - 1  # older than a directory being made
    os.utime(left / LOCK_NAME, (past, past))
    windowed(3, trace_path=trace)
    assert trace.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["window.json"]
