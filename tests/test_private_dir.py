"""Private run directories: removed by their owner, and swept when the owner was killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from torchscan_tui.run.private_dir import LOCK_NAME, NEWBORN_SECONDS, PrivateDir, remove_orphans

OWNER = """
import sys, time
from torchscan_tui.run.private_dir import PrivateDir
print(PrivateDir(sys.argv[1]).path, flush=True)
time.sleep(60)
"""


def start_owner(folder):
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    return owner, owner.stdout.readline().strip()


def age(path):
    """Make a directory's lock look older than a directory being created."""
    past = time.time() - NEWBORN_SECONDS - 1
    os.utime(os.path.join(path, LOCK_NAME), (past, past))


def test_a_killed_owners_directory_is_swept_and_a_live_ones_kept(tmp_path):
    killed, killed_path = start_owner(tmp_path)
    alive, alive_path = start_owner(tmp_path)
    try:
        killed.send_signal(signal.SIGKILL)  # no chance to clean up
        killed.wait()
        age(killed_path)
        age(alive_path)
        assert os.path.isdir(killed_path)
        mine = PrivateDir(str(tmp_path))  # making one sweeps the orphans first
        assert not os.path.exists(killed_path)
        assert os.path.isdir(alive_path)
        mine.remove()
        assert not os.path.exists(mine.path)
        mine.remove()  # again is harmless
    finally:
        alive.kill()
        alive.wait()


def test_directories_the_sweep_cannot_vouch_for_are_left_alone(tmp_path):
    old_style = tmp_path / "torchscan-tui-abc123"  # an older version's: no lock file
    old_style.mkdir()
    newborn, newborn_path = start_owner(tmp_path)
    try:
        newborn.send_signal(signal.SIGKILL)
        newborn.wait()
        # Its lock is fresh: it could be a directory whose owner has not locked it yet.
        assert remove_orphans(str(tmp_path)) == []
        assert old_style.is_dir() and os.path.isdir(newborn_path)
        age(newborn_path)
        assert remove_orphans(str(tmp_path)) == [newborn_path]
        assert old_style.is_dir()
    finally:
        newborn.kill()
        newborn.wait()
