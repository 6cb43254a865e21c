"""The run driver: a source's runs from the screen's side, without Textual."""

from __future__ import annotations

import threading

from replay import ReplaySource, recorded_events

from torchscan_tui.run.events import PhaseChanged, RunFinished
from torchscan_tui.ui.run_driver import RunDriver


class Recorded(ReplaySource):
    def __init__(self, events, ready=()):
        super().__init__(events)
        self.ready = list(ready)
        self.cancelled = self.cleaned = 0

    def ready_events(self):
        return list(self.ready)

    def cancel(self):
        self.cancelled += 1
        super().cancel()

    def cleanup(self):
        self.cleaned += 1


def drain(driver: RunDriver) -> list:
    batches = []
    while (batch := driver.take()) is not None:
        batches.append(batch)
    return batches


def test_a_run_starts_after_the_first_frame_and_its_end_is_counted():
    source = Recorded(recorded_events(), ready=[PhaseChanged("opened")])
    driver = RunDriver(source)
    driver.restart()
    assert driver.state.phase == "starting"
    drain(driver)  # the ready events, before any frame
    assert driver.state.phase == "opened" and source.runs == 0
    thread = threading.Thread(target=driver.run)
    thread.start()
    thread.join(0.2)
    assert thread.is_alive() and source.runs == 0  # waiting for the first frame
    driver.first_frame_out()
    thread.join(10)
    batches = drain(driver)
    assert source.runs == 1 and driver.finished_count == 1
    assert sum(len(batch.rows) for batch in batches) == 8
    assert driver.state.outcome == "done" and driver.end_notices() == []


def test_leaving_before_the_first_frame_starts_nothing_and_cleans_up():
    source = Recorded(recorded_events())
    driver = RunDriver(source)
    driver.restart()
    driver.leave()
    driver.run()  # wakes at once, starts nothing
    assert source.runs == 0 and source.cancelled == 1 and source.cleaned == 1


def test_a_broken_run_fails_after_what_was_queued_and_says_so():
    driver = RunDriver(Recorded(recorded_events()))
    driver.restart()
    driver.pump.push(PhaseChanged("profiling"))
    driver.broke("RuntimeError: boom")
    drain(driver)
    assert driver.state.outcome == "failed" and driver.finished_count == 1
    ((message, title, severity, _),) = driver.end_notices()
    assert "the run broke: RuntimeError: boom" in message and severity == "error"


def test_processes_left_behind_are_said():
    driver = RunDriver(Recorded(recorded_events()))
    driver.restart()
    driver.pump.push(RunFinished("done", "ok", {"run": {"profile_leftovers": 2}}, True))
    drain(driver)
    assert [notice[1] for notice in driver.end_notices()] == ["Processes ended"]
