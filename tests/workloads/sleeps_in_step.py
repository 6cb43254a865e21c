"""workload(): one small matmul, then 20 ms of sleep as the step's last thing. Each call
appends the time since the previous call began to argv[1] (the step time a user's own
timer gives): the step overview's steps must agree with it, the sleep included."""

import sys
import time

import torch

weights = torch.ones(64, 64)
began = None


def workload() -> None:
    global began
    now = time.perf_counter()
    if began is not None:
        with open(sys.argv[1], "a") as log:
            log.write(f"{now - began}\n")
    began = now
    (weights @ weights).sum()
    time.sleep(0.02)
