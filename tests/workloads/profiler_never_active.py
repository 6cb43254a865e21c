"""A script that profiles itself with a schedule that never becomes active within its
run (wait 100 steps, of 8): its profiler records nothing."""

import torch
from torch.profiler import profile, schedule

model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
with profile(schedule=schedule(wait=100, warmup=1, active=2)) as prof:
    for _ in range(8):
        model(torch.ones(4, 8)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        prof.step()
