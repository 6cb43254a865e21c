"""The event pump: bounded batches, rows apart from events, text rows decoded after a
settle, a damaged part ending the run with the rows before it (no Textual here)."""

from __future__ import annotations

import threading
import time

from torchscan_tui.formats.report import decode_report, dumps_report, new_report
from torchscan_tui.run.events import (
    PhaseChanged,
    RowsReceived,
    RowsReplaced,
    RowTextsReceived,
    RunFinished,
)
from torchscan_tui.ui.event_pump import EventPump


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def row(name: str) -> dict:
    return {
        "operator": name,
        "input_shapes": [],
        "calls": 1,
        "cpu_self_seconds": 0.001,
        "device_self_seconds": None,
        "cpu_net_bytes": 0,
    }


def never_damaged(detail: str) -> RunFinished:
    raise AssertionError(detail)


def test_rows_go_apart_from_events_in_order_and_the_batch_knows_the_end():
    pump = EventPump(clock=FakeClock())
    pump.push(PhaseChanged("profiling"))
    pump.push(RowsReceived([row("a"), row("b")]))
    pump.push(RowsReceived([row("c")]))
    pump.push(RunFinished("done", "ok", {}, True))
    batch = pump.take(never_damaged)
    assert [r["operator"] for r in batch.rows] == ["a", "b", "c"]
    assert [type(e).__name__ for e in batch.events] == ["PhaseChanged", "RunFinished"]
    assert batch.finished and not batch.has_more and not pump


def test_a_flood_is_taken_a_bounded_batch_at_a_time():
    pump = EventPump(max_events=3, clock=FakeClock())
    for i in range(7):
        pump.push(PhaseChanged(str(i)))
    sizes = []
    while pump:
        sizes.append(len(pump.take(never_damaged).events))
    assert sizes == [3, 3, 1]


def _pending(count: int, first_page: int):
    report = new_report(operators=[row(f"op{i}") for i in range(count)])
    _, pending = decode_report(dumps_report(report).encode(), "r.json", first_page)
    return pending


def test_text_rows_wait_for_the_settle_then_decode():
    clock = FakeClock()
    pump = EventPump(settle_s=0.4, clock=clock)
    pump.restart()
    for part in _pending(2500, 10).split():
        pump.push(RowTextsReceived(part))
    assert pump.take(never_damaged).rows == []  # still settling: nothing decoded
    assert pump
    clock.now += 0.5
    rows = []
    while pump:
        rows += pump.take(never_damaged).rows
    assert [r["operator"] for r in rows] == [f"op{i}" for i in range(10, 2500)]


def test_a_damaged_part_ends_the_run_and_drops_the_rest():
    pending = _pending(30, 10)
    parts = list(pending.split())
    pump = EventPump(settle_s=0.0, clock=FakeClock())
    pump.push(RowTextsReceived(parts[0]))
    pump.push(RunFinished("done", "all rows", {}, True))
    broken = type(parts[0])([(b'[{"operator": 3}]', 1)], offset=10)
    pump._inbox.appendleft(RowTextsReceived(broken))
    said = []

    def damaged(detail: str) -> RunFinished:
        said.append(detail)
        return RunFinished("done", "damaged", {}, False)

    batch = pump.take(damaged)
    assert batch.rows == [] and [e.message for e in batch.events] == ["damaged"]
    assert "row 11" in said[0] and not pump


def test_rows_replaced_takes_the_place_of_the_rows_before_it_in_the_batch():
    """Issue 19: a rank job's cross-rank rows replace the ranks' own, streamed before."""
    pump = EventPump(clock=FakeClock())
    pump.push(RowsReceived([row("r0 own")]))
    batch = pump.take(never_damaged)
    assert [r["operator"] for r in batch.rows] == ["r0 own"] and not batch.replace
    pump.push(RowsReceived([row("r1 own")]))
    pump.push(RowsReplaced([row("cross")]))
    pump.push(RunFinished("done", "ok", {}, True))
    batch = pump.take(never_damaged)
    assert [r["operator"] for r in batch.rows] == ["cross"] and batch.replace
    assert batch.finished


def _pushing(pump: EventPump, parts: list) -> threading.Thread:
    """A source's thread pushing every part, then the end, as ReportSource.run does."""

    def run() -> None:
        for part in parts:
            pump.push(RowTextsReceived(part))
        pump.push(RunFinished("done", "all rows", {}, True))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _waiting(pump: EventPump, count: int) -> None:
    """Until the pump holds ``count`` events (the pushing thread is quick)."""
    deadline = time.monotonic() + 10
    while len(pump._inbox) != count and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # and a moment more, in which it must not grow


def test_a_sources_thread_waits_while_two_parts_of_text_are_undecoded():
    """Rows sent as text are only bytes until decoded: a thread that reads them faster
    than the app decodes them piled up ~25 MiB of 100k rows over what the rows settle at.
    The thread now waits with two parts in the inbox, and goes on as each is taken."""
    parts = list(_pending(8000, 10).split())  # eight parts past the first page
    pump = EventPump(settle_s=0.0, clock=FakeClock(), parts_ahead=2)
    thread = _pushing(pump, parts)
    _waiting(pump, 2)
    assert len(pump._inbox) == 2 and thread.is_alive()
    rows = []
    while thread.is_alive() or pump:
        batch = pump.take(never_damaged)
        rows += batch.rows
        assert sum(type(e) is RowTextsReceived for e in pump._inbox) <= 2
        if not batch.rows and not batch.finished:
            time.sleep(0.01)
        if batch.finished:
            break
    assert [r["operator"] for r in rows] == [f"op{i}" for i in range(10, 8000)]


def test_a_closed_pump_lets_a_waiting_thread_go_on_and_the_app_never_waits():
    parts = list(_pending(6000, 10).split())
    pump = EventPump(settle_s=0.0, clock=FakeClock(), parts_ahead=2)
    thread = _pushing(pump, parts)
    _waiting(pump, 2)
    assert thread.is_alive()  # waiting for room: nothing is taken
    pump.close()  # the app is leaving
    thread.join(5)
    assert not thread.is_alive() and len(pump._inbox) == len(parts) + 1
    on_the_apps_thread = EventPump(settle_s=0.0, clock=FakeClock(), parts_ahead=2)
    for part in _pending(6000, 10).split():  # the app's own thread: would wait for itself
        on_the_apps_thread.push(RowTextsReceived(part))
    assert len(on_the_apps_thread._inbox) == 6


def test_a_restart_forgets_the_parts_waiting_and_makes_room():
    parts = list(_pending(6000, 10).split())
    pump = EventPump(settle_s=0.0, clock=FakeClock(), parts_ahead=2)
    thread = _pushing(pump, parts)
    _waiting(pump, 2)
    pump.restart()  # a new run: what the old one queued is dropped, and room made
    _waiting(pump, 2)
    assert thread.is_alive() and len(pump._inbox) == 2
    pump.close()
    thread.join(5)


def test_a_damaged_part_ends_the_run_though_its_source_still_sends():
    """The source's thread waits for room, so it is still sending when a damaged part is
    decoded: what it sends after (more parts, its own "all rows" end) must not undo the
    end the damage made. Found by tests/ui/test_reopen.py, one run in several."""
    parts = list(_pending(6000, 10).split())
    broken = type(parts[0])([(b'[{"operator": 3}]', 1)], offset=10)
    pump = EventPump(settle_s=0.0, clock=FakeClock(), parts_ahead=2)
    thread = _pushing(pump, [broken, *parts])
    _waiting(pump, 2)
    ends = []
    batch = pump.take(lambda detail: RunFinished("done", f"damaged: {detail}", {}, False))
    ends += [event.message for event in batch.events]
    thread.join(5)
    assert not thread.is_alive()
    while pump:
        ends += [event.message for event in pump.take(never_damaged).events]
    assert len(ends) == 1 and ends[0].startswith("damaged: row 11")
