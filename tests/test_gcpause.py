"""Pausing the cyclic collector around bulk work, and keeping what a burst made."""

from __future__ import annotations

import gc
import os
import threading

import pytest
from replay import make_row

from torchscan_tui import cli
from torchscan_tui.common import startup
from torchscan_tui.common.gcpause import GcBurst
from torchscan_tui.run.protocol import RowsMessage, encode, read_messages


@pytest.fixture(autouse=True)
def collector_restored():
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_a_burst_pauses_the_collector_and_restores_its_state():
    gc.enable()
    burst = GcBurst()
    burst.set(True)
    assert not gc.isenabled() and burst.active
    burst.set(False)
    assert gc.isenabled() and not burst.active
    gc.disable()
    burst.set(True)
    burst.set(False)
    assert not gc.isenabled()  # it was off before the burst: it stays off


@pytest.mark.parametrize("keep", [True, False])
def test_what_a_kept_burst_made_is_frozen_before_the_collector_resumes(keep):
    """Resumed, the collector would walk every object the burst made in its next young
    collections; a burst whose objects stay freezes them first."""
    gc.enable()
    gc.unfreeze()
    burst = GcBurst(keep=keep)
    burst.set(True)
    made = [[index] for index in range(10_000)]
    burst.set(False)
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    assert (frozen >= len(made)) if keep else frozen == 0


def test_rows_read_from_the_channel_are_frozen_when_the_burst_ends():
    gc.enable()
    gc.unfreeze()
    read_fd, write_fd = os.pipe()
    rows = [make_row(f"op{index}", [[index, 2]], 1, 0.5) for index in range(2000)]

    def send() -> None:  # more than a pipe holds: written while the reader reads
        os.write(write_fd, encode(RowsMessage(rows)))
        os.close(write_fd)

    writer = threading.Thread(target=send)
    writer.start()
    received = list(read_messages(read_fd))
    writer.join()
    os.close(read_fd)
    assert received[0].rows == rows
    assert gc.get_freeze_count() >= 2 * len(rows)  # each row and its shapes list
    assert gc.isenabled()


def test_start_up_pauses_the_collector_then_freezes_what_it_made():
    """The entry points pause the collector; ``started`` freezes what start-up made and
    resumes it, once; a collector that was off before stays off."""
    gc.enable()
    gc.unfreeze()
    startup.pause_for_start()
    assert not gc.isenabled()
    made = [[index] for index in range(10_000)]
    startup.started()
    assert gc.isenabled() and gc.get_freeze_count() >= len(made)
    startup.started()  # again: nothing left to do
    assert gc.isenabled()
    gc.disable()
    startup.pause_for_start()
    startup.started()
    assert not gc.isenabled()


@pytest.mark.parametrize("argv", [[], ["--row-limit", "0", "x.py"], ["missing.json"]])
def test_the_command_resumes_the_collector_however_it_ends(argv, capsys):
    gc.enable()
    assert cli.main(argv) != 0
    assert gc.isenabled()
