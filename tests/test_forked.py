"""A call made in a forked child beside this process's work (common/forked.py), and a big
trace's blocks made that way while its rows are grouped: the same report as made in line
(issue 31, point 1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from forked_helpers import forked_recording
from proc_helpers import gone_within, reaped

from torchscan_tui.common import forked
from torchscan_tui.common.forked import Forked, can_fork
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.formats.report import dumps_report
from torchscan_tui.formats.trace import reader
from torchscan_tui.run.events import RunFinished
from torchscan_tui.run.trace_source import TraceSource

DATA = Path(__file__).parent / "data"
PARENT = os.getpid()

needs_fork = pytest.mark.skipif(not can_fork(), reason="fork beside: Linux with two cores")


def where() -> int:
    return os.getpid()


def in_child_only(action):
    """A call that does ``action`` in a child and returns "here" in this process."""

    def call():
        if os.getpid() != PARENT:
            action()
        return "here"

    return call


def out_of_memory() -> None:
    raise MemoryError


@needs_fork
def test_the_call_runs_in_a_child_and_its_value_comes_back():
    with Forked(where) as call:
        assert call.pid is not None
        child = call.result()
    assert child != PARENT
    assert reaped(child)


def test_without_a_fork_the_call_is_made_here(monkeypatch):
    assert Forked(where, fork=False).result() == PARENT
    monkeypatch.setattr(forked, "cores", lambda: 1)  # one core: nothing beside it
    with Forked(where) as call:
        assert call.pid is None
        assert call.result() == PARENT


@needs_fork
def test_a_call_that_raises_in_the_child_is_made_here_and_raises_here():
    def fails():
        raise ValueError(f"failed in {os.getpid()}")

    with Forked(fails) as call, pytest.raises(ValueError, match=f"failed in {PARENT}$"):
        call.result()


@needs_fork
@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(lambda: os.kill(os.getpid(), signal.SIGKILL), id="killed"),
        pytest.param(lambda: os._exit(0), id="exits-without-a-result"),
        pytest.param(out_of_memory, id="out-of-memory"),
    ],
)
def test_a_child_that_fails_gives_the_value_made_here(failure):
    with Forked(in_child_only(failure)) as call:
        assert call.result() == "here"


@needs_fork
def test_a_result_that_does_not_pickle_is_made_here():
    def unpicklable():
        return (lambda: None) if os.getpid() != PARENT else "here"

    with Forked(unpicklable) as call:
        assert call.result() == "here"


@needs_fork
def test_a_child_past_its_time_is_stopped_and_the_call_made_here():
    with Forked(in_child_only(lambda: time.sleep(60))) as call:
        child = call.pid
        started = time.monotonic()
        assert call.result(timeout=0.3) == "here"
        assert time.monotonic() - started < 10
        assert child is not None and reaped(child)


@needs_fork
def test_a_caller_that_fails_before_the_result_stops_and_reaps_the_child():
    with pytest.raises(RuntimeError), Forked(in_child_only(lambda: time.sleep(60))) as call:
        child = call.pid
        raise RuntimeError("the grouping failed")
    assert child is not None and reaped(child)


@needs_fork
def test_ctrl_c_as_the_child_starts_stops_and_reaps_it(monkeypatch):
    """A KeyboardInterrupt right after the fork, before the child is recorded, would
    leave a child nobody stops: it is held back until then, and the child stopped."""
    fork, made = os.fork, []

    def interrupted_fork() -> int:
        pid = fork()
        if pid:
            made.append(pid)
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, as fork returns
        return pid

    monkeypatch.setattr(forked.os, "fork", interrupted_fork)
    # Python's own Ctrl-C handler: a shell's background job (as CI may run the suite)
    # starts with SIGINT ignored, and the signal would never raise.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), Forked(in_child_only(lambda: time.sleep(60))):
            pass
    finally:
        signal.signal(signal.SIGINT, previous)
    assert made and reaped(made[0])


@needs_fork
def test_a_child_dies_with_its_parent():
    """A parent killed outright takes its child with it: the app, quit while a daemon
    thread reads a trace with children beside it, leaves none computing for nobody."""
    script = """
import os, signal, time
from torchscan_tui.common.forked import Forked
with Forked(lambda: time.sleep(60)) as child:
    print(child.pid, flush=True)
    time.sleep(0.3)  # the child has set its parent-death signal (or exits on its own)
    os.kill(os.getpid(), signal.SIGKILL)
"""
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE) as parent:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())  # not to its end: the child holds it too
        assert parent.wait(timeout=60) == -signal.SIGKILL
        assert gone_within([child], 5.0), "the child outlived its parent"


@needs_fork
def test_a_big_value_comes_back_whole():
    value = {"rows": [[index, str(index) * 3] for index in range(200_000)]}  # ~5 MiB pickled
    with Forked(lambda: value if os.getpid() != PARENT else None) as call:
        assert call.result() == value


@needs_fork
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(  # [memory] instants: a memory block; call stacks; kernels
            "resnet50_2021_cuda.pt.trace.json.gz", marks=pytest.mark.slow
        ),
        "mtia_inference.json.gz",  # steps, no memory
        "cpu_trace.json",  # CPU only, memory
    ],
)
def test_a_trace_s_blocks_made_beside_the_grouping_give_the_report_made_in_line(name, monkeypatch):
    """The step model and summaries made in a child (every trace forks:
    the threshold set to one event) equal those made in line, in every field."""
    in_line, _ = open_profile(DATA / name)
    made_in: list[int] = []  # the process that made the blocks
    monkeypatch.setattr(reader, "FORK_FROM_EVENTS", 1)
    monkeypatch.setattr(reader, "Forked", forked_recording(made_in))
    beside, _ = open_profile(DATA / name)
    assert len(made_in) == 1 and made_in[0] != PARENT, "the blocks were made in line"
    assert beside["overview"] is not None
    if name != "mtia_inference.json.gz":
        assert beside.get("memory") is not None
    assert dumps_report(beside) == dumps_report(in_line)  # as --json writes it


def _forks_asked(monkeypatch) -> list[bool]:
    """Each opening's ``fork`` as the reader hands it to :class:`Forked`."""
    asked: list[bool] = []

    class Recorded(Forked):
        def __init__(self, call, fork=True):
            asked.append(fork)
            super().__init__(call, fork)

    monkeypatch.setattr(reader, "Forked", Recorded)
    return asked


def test_a_small_trace_and_a_caller_that_says_not_to_make_the_blocks_in_line(monkeypatch):
    """Below the threshold, or asked not to, no child is made."""
    asked = _forks_asked(monkeypatch)
    open_profile(DATA / "mtia_inference.json.gz")  # 14k events
    monkeypatch.setattr(reader, "FORK_FROM_EVENTS", 1)
    open_profile(DATA / "mtia_inference.json.gz", fork=False)
    assert asked == [False, False]
    open_profile(DATA / "mtia_inference.json.gz")
    assert asked == [False, False, True]


def test_the_app_s_trace_reading_makes_the_blocks_beside_its_grouping(monkeypatch, trace_in_pieces):
    """The app reads a big trace as the command does: the step model and summaries in a
    child beside the grouping (run/trace_source.py; its peak with the children stays
    under the file's size since the grouping's own peak came down)."""
    asked = _forks_asked(monkeypatch)
    monkeypatch.setattr(reader, "FORK_FROM_EVENTS", 1)
    source = TraceSource(str(trace_in_pieces), early_after_s=60.0)
    events: list = []
    source.run(events.append)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.outcome == "done"
    if finished.trace is not None:
        finished.trace.close()
    assert finished.report["overview"] is not None
    assert asked == [True]


@pytest.mark.parametrize(("readers", "cores", "fork"), [(2, 2, False), (2, 4, True), (4, 6, False)])
def test_a_rank_pool_s_readers_fork_only_with_a_second_core_each(monkeypatch, readers, cores, fork):
    from torchscan_tui.formats import ranks

    monkeypatch.setattr(ranks, "cores", lambda: cores)
    assert ranks.readers_fork(readers) is fork
