"""A script that profiles itself with a schedule longer than the default window (wait 5,
warm-up 5, active 5: nanoGPT's bench.py has one like it), 20 steps. Each step appends
"PID STEP" to argv[1]."""

import os
import sys

import torch
from torch.profiler import profile, schedule

model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
with profile(schedule=schedule(wait=5, warmup=5, active=5)) as prof:
    for step in range(1, 21):
        model(torch.ones(4, 8)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        prof.step()
        with open(sys.argv[1], "a") as log:
            log.write(f"{os.getpid()} {step}\n")
