"""Issue 28, point 2: a window of op-dense steps took the worker to 21.7 GiB on a 24 GiB
machine. The window now ends before its events would pass the worker's memory budget,
keeps the steps it has and says so."""

from __future__ import annotations

import json

import pytest
from conftest import torchscan

from torchscan_tui.worker.window_memory import (
    PEAK_PER_RECORDED,
    WindowMemory,
    memory_budget,
    parse_budget,
)

MB = 1 << 20


def test_a_budget_is_read_in_bytes_or_with_a_suffix():
    assert parse_budget("1073741824") == 1 << 30
    assert parse_budget("512M") == 512 * MB
    assert parse_budget("2g") == 2 << 30
    assert parse_budget("1.5GiB") == int(1.5 * (1 << 30))
    assert parse_budget("lots") is None and parse_budget("-5") is None and parse_budget("") is None


def test_without_a_budget_given_it_is_half_the_memory_available():
    budget, source = memory_budget({})
    assert source == "half the memory available" and budget is not None and budget > 0
    assert memory_budget({"TORCHSCAN_WORKER_MEMORY": "300M"}) == (
        300 * MB,
        "TORCHSCAN_WORKER_MEMORY",
    )
    # A budget that does not parse is not a budget of zero: the default holds.
    assert memory_budget({"TORCHSCAN_WORKER_MEMORY": "x"})[1] == "half the memory available"


def growing(per_step: int):
    """A resident set that grows ``per_step`` bytes a step (the first reading: the
    window's opening)."""
    readings = iter(range(0, 100 * per_step, per_step))
    return lambda: next(readings)


def test_the_window_ends_when_one_more_step_would_pass_the_budget_at_its_peak():
    per_step = 10 * MB  # at the peak: PEAK_PER_RECORDED times that a step
    memory = WindowMemory(int(PEAK_PER_RECORDED * per_step * 3.5), "test", growing(per_step))
    memory.window_opens()
    kept = 0
    for done in range(1, 10):
        memory.step_done()
        kept = done
        if not memory.room_for_another(done):
            break
    assert kept == 3 and memory.cut_after == 3  # a 4th would have been 4 x at the peak
    assert memory.projected_peak() <= memory.budget
    note = memory.note(requested=8)
    assert note is not None and note["code"] == "window_cut_for_memory"
    assert (
        "cut to 3 of 8 step(s)" in note["message"] and "TORCHSCAN_WORKER_MEMORY" in note["message"]
    )


def test_no_budget_or_no_reading_never_cuts():
    unbounded = WindowMemory(None, "no /proc/meminfo", growing(MB))
    unreadable = WindowMemory(1, "test", lambda: None)
    for memory in (unbounded, unreadable):
        memory.window_opens()
        memory.step_done()
        assert memory.room_for_another(1) and memory.note(5) is None


@pytest.mark.slow
def test_a_worker_bounded_to_a_budget_stops_an_op_dense_window_early(workloads, tmp_path):
    """The done-when: a worker bounded to a memory budget stops an op-dense window early
    with a note instead of growing past it. Measured: its peak over its size when the
    window opened stays within the budget."""
    out = tmp_path / "r.json"
    budget = 700 * MB  # a session per step (worker/step_sessions.py): steps of 12k ops
    result = torchscan(workloads / "op_dense.py", "--json", out, "--warmup", "1", "--steps", "8",
                       "--rss-steps", "2", "--", "--ops", "12000",
                       env={"TORCHSCAN_WORKER_MEMORY": str(budget)})  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    steps = report["context"]["steps"]
    memory = steps["memory"]
    assert memory["budget"] == budget and memory["budget_source"] == "TORCHSCAN_WORKER_MEMORY"
    assert 1 <= steps["profiled"] < 8 and memory["cut_after"] == steps["profiled"]
    assert len(steps["step_seconds"]) == steps["profiled"]
    (note,) = [n for n in report["diagnostics"] if n["code"] == "window_cut_for_memory"]
    assert f"cut to {steps['profiled']} of 8 step(s)" in note["message"]
    assert memory["peak_rss"] - memory["window_start_rss"] <= budget
    calls = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls["Optimizer.step#SGD.step"] == steps["profiled"]  # the rows hold the kept steps
    assert "collecting its events" in result.stderr  # progress between the steps and grouping


def test_op_dense_steps_or_no_room_take_no_traced_step_and_say_why():
    """The step after the window, traced for call sites, records several times a step:
    a traced step of 36k small ops took 2.1 GB and 95 s more than the window. Past
    MAX_TRACED_STEP_BYTES a step, or without room for it in the budget, none is taken."""
    from torchscan_tui.worker.call_sites import SiteStep
    from torchscan_tui.worker.steps import MAX_TRACED_STEP_BYTES, TRACED_STEP_COST, StepWindow

    def window_of(memory: WindowMemory, steps: int = 2) -> StepWindow:
        window = StepWindow(0, steps)
        window.memory, window.site_step = memory, SiteStep()
        memory.window_opens()
        for _ in range(steps):
            memory.step_done()
            window.step_seconds.append(0.1)
        return window

    dense = window_of(WindowMemory(None, "test", growing(MAX_TRACED_STEP_BYTES + MB)))
    assert dense._site_step_follows() is False
    assert dense.site_step is not None and "op-dense" in (dense.site_step.missing or "")
    per_step = 10 * MB  # light steps, but a budget with room for the window alone
    tight = WindowMemory(int(PEAK_PER_RECORDED * per_step * (2 + TRACED_STEP_COST - 1)), "test",
                         growing(per_step))  # fmt: skip
    window = window_of(tight)
    assert window._site_step_follows() is False
    assert "budget leaves no room" in (window.site_step.missing or "")  # type: ignore[union-attr]
    roomy = window_of(WindowMemory(None, "test", growing(per_step)))
    assert roomy._site_step_follows() is True
