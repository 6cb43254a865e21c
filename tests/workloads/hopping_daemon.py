"""workload() starts a daemon that hops PIDs: it setsid()s, ignores SIGTERM and SIGHUP,
and re-forks every half millisecond, the parent exiting. Its process name (comm) is
``torchscan-hop``, inherited by every generation, so a test can look for survivors."""

import ctypes
import os
import signal
import time

NAME = b"torchscan-hop"


def _hop():
    ctypes.CDLL(None).prctl(15, NAME, 0, 0, 0)  # PR_SET_NAME
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while True:
        time.sleep(0.0005)
        if os.fork() != 0:
            os._exit(0)


def workload():
    import torch

    torch.ones(4).sum()
    if os.fork() == 0:
        try:
            _hop()
        finally:
            os._exit(0)
    time.sleep(float(os.environ.get("HOP_WAIT", "0.2")))  # hopping by the profile's end
