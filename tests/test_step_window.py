"""Step windows: W warm-up steps left out, N profiled, the script ended there.

The window's logic with a fake profiler and clock; then real torch (optimizer steps in
one process) and real child processes (the command on a training script with DataLoader
workers, and on workload())."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
from conftest import torchscan

from torchscan_tui.analysis.profiler_events import (
    STEP_END,
    WINDOW_END,
    WINDOW_START,
    RawEvent,
    window_events,
)
from torchscan_tui.worker.profiling import profile_workload
from torchscan_tui.worker.steps import StepWindow, WindowComplete, call_steps, hook_optimizer_steps


class FakeProfile:
    made: list[FakeProfile] = []

    def __init__(self):
        self.started = self.stopped = False
        FakeProfile.made.append(self)

    def start(self):
        self.started = True

    def stop(self):
        self.stopped = True


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0  # every step takes a second here
        return self.now


def started(warmup, steps, **kwargs):
    FakeProfile.made = []
    window = StepWindow(warmup, steps, clock=FakeClock(), **kwargs)
    window.marks = []  # what mark() recorded, in order
    window.start(FakeProfile, lambda: None, window.marks.append)
    return window


def test_the_warm_up_is_marked_off_and_the_window_ends_the_script():
    window = started(2, 3)
    window.step_done()
    window.step_done()  # the warm-up is over: the window opens
    assert window.marks == [WINDOW_START]
    window.step_done()
    window.step_done()
    with pytest.raises(WindowComplete):
        window.step_done()
    assert window.marks == [WINDOW_START, STEP_END, STEP_END, WINDOW_END]
    # The warm-up's profiler is let go as the window opens (between two calls of a
    # workload(), at once; past the step's end from an optimizer hook: see defer), and
    # the window's own runs until the script is done: never stopped inside a step.
    warm_up, profile = FakeProfile.made
    assert warm_up.stopped and profile.started and not profile.stopped
    window.stop()
    assert profile.stopped
    steps = window.context()["steps"]
    assert steps["profiled"] == 3 and steps["seen"] == 5 and not steps["whole_run"]
    assert steps["step_seconds"] == [1.0, 1.0, 1.0]  # from the window's opening on
    assert window.notes() == []


def test_the_rows_are_the_events_that_start_inside_the_window_step_by_step():
    def event(name, start, end):
        return RawEvent(name, "CPU", False, 1, start, end, 0, 0, [])

    events = [
        event("warm-up op", 0, 10),
        event("Optimizer.step (warm-up)", 10, 30),
        event(WINDOW_START, 20, 20),
        event("step 1 op", 31, 40),
        event("Optimizer.step 1", 41, 50),
        event(STEP_END, 45, 45),
        event("step 2 op", 51, 55),
        event("Optimizer.step 2", 56, 70),
        event(WINDOW_END, 60, 60),
        event("after the window", 71, 80),
    ]
    kept, steps = window_events(events)
    assert [e.name for e in kept] == ["step 1 op", "Optimizer.step 1", "step 2 op",
                                      "Optimizer.step 2"]  # fmt: skip
    assert [[e.name for e in step] for step in steps] == [
        ["step 1 op", "Optimizer.step 1"],
        ["step 2 op", "Optimizer.step 2"],
    ]
    cut = [e for e in events if e.name not in (WINDOW_END, "after the window")]
    assert [e.name for e in window_events(cut)[0]][-1] == "Optimizer.step 2"  # to the end
    no_start = [e for e in events if e.name != WINDOW_START]  # the warm-up never ended
    whole, (one,) = window_events(no_start)
    assert whole == one == [e for e in no_start if e.name not in (WINDOW_END, STEP_END)]


def test_run_to_end_keeps_counting_without_raising():
    window = started(0, 1, run_to_end=True)
    for _ in range(4):
        window.step_done()
    assert window.context()["steps"]["seen"] == 4 and window.context()["steps"]["profiled"] == 1


@pytest.mark.parametrize(
    ("seen", "code"),
    [(0, "no_steps_seen"), (1, "window_not_reached"), (3, "window_cut_short")],
)
def test_a_run_that_ends_early_says_what_was_profiled(seen, code):
    window = started(2, 3)
    for _ in range(seen):
        window.step_done()
    window.stop()
    assert [note["code"] for note in window.notes()] == [code]
    assert window.context()["steps"]["whole_run"] is (seen < 2)
    assert FakeProfile.made[-1] is window.profile and window.profile.stopped
    assert len(FakeProfile.made) == (2 if seen >= 2 else 1)  # a fresh one once the window opened


def test_a_real_training_loop_is_profiled_for_its_window_only():
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    done = []

    def train():
        for _ in range(40):
            model(torch.ones(4, 8)).sum().backward()
            optimizer.step()
            done.append(1)

    window = StepWindow(2, 3)
    undo = hook_optimizer_steps(window)
    try:
        report = profile_workload(train, window=window)
    finally:
        undo()
    # ended inside step 6's optimizer.step(), not after 40: 2 warm-up, 3 profiled, one
    # traced for call sites (worker/call_sites.py)
    assert len(done) == 5
    calls = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls["Optimizer.step#SGD.step"] == 3
    assert report["context"]["steps"]["profiled"] == 3
    for row in report["operators"]:  # every row, step by step, adds up to its total
        spread = row["cpu_self_seconds_per_step"]
        assert spread["steps"] == 3
        assert spread["min"] <= spread["median"] <= spread["max"]
        assert spread["mean"] * 3 == pytest.approx(row["cpu_self_seconds"], rel=1e-6, abs=1e-9)
        assert spread["min"] * 3 <= row["cpu_self_seconds"] * (1 + 1e-9) + 1e-12
        assert row["cpu_self_seconds"] <= spread["max"] * 3 * (1 + 1e-9) + 1e-12


def test_workload_calls_are_steps():
    calls = []
    window = StepWindow(1, 3)
    report = profile_workload(call_steps(lambda: calls.append(torch.ones(4).sum()), window),
                              window=window)  # fmt: skip
    assert len(calls) == 5  # 1 warm-up, 3 profiled, 1 traced for call sites
    assert {row["operator"]: row["calls"] for row in report["operators"]}["aten::sum"] == 3


def steps_per_pass(log) -> list[int]:
    """How many steps each process ran, in the order the passes ran (the profile first,
    then the peak pass)."""
    pids = Counter(line.split()[0] for line in log.read_text().splitlines())
    return list(pids.values())


@pytest.mark.slow
def test_a_training_script_is_profiled_for_a_window_and_its_run_ends_there(workloads, tmp_path):
    log, out = tmp_path / "steps.log", tmp_path / "r.json"
    result = torchscan(workloads / "trains.py", "--json", out, "--warmup", "2", "--steps", "3",
                     "--", "--epochs", "3", "--log", log)  # fmt: skip
    assert result.returncode == 0, result.stderr
    # 2 + 3 + 1 traced for call sites, - 1 not logged; then the whole run for the peak
    assert steps_per_pass(log) == [5, 30]
    report = json.loads(out.read_text())
    steps = report["context"]["steps"]
    assert steps["profiled"] == 3 and steps["warmup"] == 2 and len(steps["step_seconds"]) == 3
    calls = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls["Optimizer.step#SGD.step"] == 3
    assert not any(name.startswith("[torchscan]") for name in calls)  # markers are not rows
    assert "steps 3-5 of optimizer.step(): median" in result.stderr
    overview = report["overview"]  # each step's time split, the shares, the advice
    assert len(overview["steps"]) == 3
    assert sum(overview["shares"].values()) == pytest.approx(1.0)
    assert overview["shares"]["dataloader"] > 0  # the DataLoader's wait is seen
    assert "cpu_only" in [item["code"] for item in overview["recommendations"]]
    # Progress when stderr is not a terminal: the phase, step k of W + N (a line every few
    # seconds and the last step's, not one a step).
    assert "torchscan-tui: run 2 of 2, the whole script for peak RSS" in result.stderr
    for step in (1, 5):
        assert f"torchscan-tui: run 1 of 2, the profile: step {step} of 5 (" in result.stderr
    # The rows' summary as soon as they exist, before the peak pass.
    summary = result.stderr.index("torchscan-tui: the profile is in: ")
    assert summary < result.stderr.index("run 2 of 2, the whole script for peak RSS")
    # Kineto's probe lines (the warm-up's profiler and the window's): one shown, the
    # rest counted (issue 28, point 12).
    probes = [line for line in result.stderr.splitlines() if line.startswith("USDT:")]
    assert len(probes) == 1 and "the profiler this tool started" in probes[0]
    assert "more profiler start/stop probe lines, folded)" in result.stderr


@pytest.mark.slow
def test_rss_steps_bounds_the_peak_pass_and_says_so(workloads, tmp_path):
    log, out = tmp_path / "steps.log", tmp_path / "r.json"
    result = torchscan(workloads / "trains.py", "--json", out, "--rss-steps", "5", "--steps", "2",
                     "--", "--epochs", "3", "--log", log)  # fmt: skip
    assert result.returncode == 0, result.stderr
    # 1 + 2 + 1 traced - 1; the peak pass's 5th step never logged: it ended there
    assert steps_per_pass(log) == [3, 4]
    report = json.loads(out.read_text())
    assert report["run"]["rss_status"]["rss_steps"] == 5
    assert report["run"]["rss_status"]["exit_code"] == 0
    assert report["totals"]["process_peak_rss"]["value"] > 0
    assert "(up to step 5)" in result.stderr


@pytest.mark.slow
def test_workload_is_warmed_up_and_repeated(workloads, tmp_path):
    log, out = tmp_path / "calls.log", tmp_path / "r.json"
    result = torchscan(workloads / "counts_calls.py", "--json", out, "--steps", "3", "--", log)
    assert result.returncode == 0, result.stderr
    # the RSS pass runs the script, which does not call workload(); then warm-up, 3 steps
    # and one traced for call sites
    assert len(log.read_text().splitlines()) == 1 + 3 + 1
    report = json.loads(out.read_text())
    calls = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls["aten::mm"] == 3
    assert report["context"]["steps"]["source"] == "workload()"
    assert not any(name.startswith("[torchscan]") for name in calls)  # markers are not rows


@pytest.mark.slow
def test_a_script_without_steps_is_profiled_whole_with_a_note(workloads, tmp_path):
    out = tmp_path / "r.json"
    result = torchscan(workloads / "script_only.py", "--json", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert [n["code"] for n in report["diagnostics"]].count("no_steps_seen") == 1
    assert report["context"]["steps"]["whole_run"] and report["operators"]


@pytest.mark.slow
def test_a_script_with_its_own_profiler_schedule_is_profiled_in_its_window(workloads, tmp_path):
    """Issue 18, 1: nesting a second profiler gave 0 rows. The script's own schedule
    (wait 1, warm-up 1, active 3) is the window; its trace handler still runs; the run
    ends at the step after it."""
    log, out = tmp_path / "steps.log", tmp_path / "r.json"
    result = torchscan(workloads / "profiles_itself.py", "--json", out, "--", log)
    assert result.returncode == 0, result.stderr
    lines = log.read_text().splitlines()
    pids = list(dict.fromkeys(line.split()[0] for line in lines))
    profile_pass = [line.split()[1] for line in lines if line.startswith(pids[0] + " ")]
    assert profile_pass == ["1", "2", "3", "4", "ready", "5"]  # ended at its 6th step
    report = json.loads(out.read_text())
    calls = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls["Optimizer.step#SGD.step"] == 3 and calls["ProfilerStep*"] == 3
    assert not any(name.startswith("[torchscan]") for name in calls)
    assert "script_profiler_adopted" in [note["code"] for note in report["diagnostics"]]
    steps = report["context"]["steps"]
    assert steps["profiled"] == 3 and len(steps["step_seconds"]) == 3
    assert all(row["cpu_self_seconds_per_step"]["steps"] == 3 for row in report["operators"])


@pytest.mark.slow
def test_steps_on_another_thread_end_the_window_without_a_hang(workloads, tmp_path):
    """Issue 26, point 5: the window's end was raised on the consumer thread, killed it,
    and the run hung until --timeout; --rss-steps hung the peak pass the same way."""
    log, out = tmp_path / "steps.log", tmp_path / "r.json"
    result = torchscan(workloads / "steps_on_a_thread.py", "--json", out, "--rss-steps", "3",
                       "--timeout", "120", "--", log)  # fmt: skip
    assert result.returncode == 0, result.stderr
    # warm-up 1 + 5 profiled + 1 traced - 1 (ended in it), then the peak to step 3
    assert steps_per_pass(log) == [6, 2]
    report = json.loads(out.read_text())
    assert report["context"]["steps"]["profiled"] == 5
    (note,) = [n for n in report["diagnostics"] if n["code"] == "steps_on_another_thread"]
    assert "run the training loop on the main thread" in note["message"]
    assert report["run"]["rss_status"]["rss_steps"] == 3


@pytest.mark.slow
def test_rss_steps_stops_a_script_that_swallows_every_exception(workloads, tmp_path):
    """Issue 26, point 6: a script that catches BaseException around each step swallowed
    the stop, ran on, and the peak still said "up to step K"."""
    log, out = tmp_path / "steps.log", tmp_path / "r.json"
    result = torchscan(workloads / "swallows_everything.py", "--json", out, "--rss-steps",
                       "4", "--", log)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert steps_per_pass(log)[1] == 3  # the 4th step ended the peak pass before its log line
    report = json.loads(out.read_text())
    assert report["run"]["rss_status"]["rss_steps"] == 4
    assert report["context"]["steps"]["profiled"] == 5  # the window's steps still


@pytest.mark.slow
def test_rss_steps_past_the_scripts_end_says_the_whole_run(workloads, tmp_path):
    log, out = tmp_path / "steps.log", tmp_path / "r.json"
    result = torchscan(workloads / "swallows_everything.py", "--json", out, "--rss-steps",
                       "50", "--", log)  # fmt: skip
    assert result.returncode == 0, result.stderr
    status = json.loads(out.read_text())["run"]["rss_status"]
    assert "rss_steps" not in status and status["rss_steps_unreached"] == 50
    assert "(the whole run: it ended before step 50)" in result.stderr


@pytest.mark.slow
def test_a_wrapper_optimizers_step_counts_once(workloads, tmp_path):
    """Issue 26, point 7: Lookahead's step() calls its inner optimizer's step(): each
    iteration counted twice, so the window ended after half its steps."""
    log, out = tmp_path / "steps.log", tmp_path / "r.json"
    result = torchscan(workloads / "wraps_its_optimizer.py", "--json", out, "--rss-steps", "4",
                       "--", log)  # fmt: skip
    assert result.returncode == 0, result.stderr
    # warm-up 1 + 5 + 1 traced for call sites (the last not logged); then 4 for the peak
    assert steps_per_pass(log) == [6, 3]
    calls = {row["operator"]: row["calls"] for row in json.loads(out.read_text())["operators"]}
    assert calls["Optimizer.step#Lookahead.step"] == 5


@pytest.mark.slow
def test_a_self_profiling_script_with_a_long_schedule_runs_until_its_profile_is_in(
    workloads, tmp_path
):
    """Issue 28, point 5: with schedule(wait=5, warmup=5, active=5) the script was ended
    at optimizer step 6, its profiler still waiting: no rows. It now runs until its
    profiler's active steps are recorded, and the header numbers them as torch does."""
    log, out = tmp_path / "steps.log", tmp_path / "r.json"
    result = torchscan(workloads / "profiles_itself_long.py", "--json", out, "--", log)
    assert result.returncode == 0, result.stderr
    assert steps_per_pass(log) == [15, 20]  # ended at its 16th step, once its profile was in
    report = json.loads(out.read_text())
    calls = {row["operator"]: row["calls"] for row in report["operators"]}
    assert calls["ProfilerStep*"] == 5 and calls["Optimizer.step#SGD.step"] == 5
    assert report["context"]["steps"]["profiler_steps"] == ["10", "11", "12", "13", "14"]
    assert "steps ProfilerStep#10-14 of the script's own torch.profiler" in result.stderr


@pytest.mark.slow
def test_a_self_profiling_script_whose_profiler_never_records_says_so(workloads, tmp_path):
    """Issue 26, point 7: its schedule never became active, and the report claimed
    "steps 2-6" over 7 rows of model initialisation."""
    out = tmp_path / "r.json"
    result = torchscan(workloads / "profiler_never_active.py", "--json", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    steps = report["context"]["steps"]
    assert steps["whole_run"] and steps["profiled"] == 0 and steps["step_seconds"] == []
    (note,) = [n for n in report["diagnostics"] if n["code"] == "script_profiler_never_recorded"]
    assert "never reached an active step in the 8 step(s)" in note["message"]
    assert "steps 2-6" not in result.stderr and "whole run profiled" in result.stderr


@pytest.mark.slow
def test_only_the_window_is_recorded_and_its_trace_reopens_to_the_runs_rows(workloads,
                                                                            tmp_path):  # fmt: skip
    """Issue 26, point 12 and issue 28, point 6: the profiler recorded the warm-up too (a
    100k-step warm-up took the worker to 1 GB), and the exported trace held it, so
    reopened it gave other rows (layer_norm 50 calls, not 25) and failed a 10% gate
    against its own run. The warm-up's profile is let go as the window opens."""
    log, out, trace = tmp_path / "steps.log", tmp_path / "r.json", tmp_path / "t.json"
    result = torchscan(workloads / "trains.py", "--json", out, "--trace", trace, "--warmup", 3,
                       "--steps", 2, "--", "--epochs", "1", "--log", log)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    events = json.loads(trace.read_text())["traceEvents"]
    steps_in_trace = [e for e in events if str(e.get("name", "")).startswith("Optimizer.step#")]
    assert len(steps_in_trace) == 2  # the window's two, none of the three warm-up steps
    reopened = torchscan(trace, "--json", tmp_path / "again.json")
    assert reopened.returncode == 0, reopened.stderr
    again = json.loads((tmp_path / "again.json").read_text())

    def calls(rows):  # by operator: a TensorList's Input Dims differ in the trace
        counted = Counter()
        for row in rows:
            if not row["operator"].startswith("["):
                counted[row["operator"]] += row["calls"]
        return counted

    assert calls(again["operators"]) == calls(report["operators"])
