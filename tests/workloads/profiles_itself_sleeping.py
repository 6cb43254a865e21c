"""A training script that profiles itself (schedule wait 1, warm-up 1, active 3) and
sleeps 20 ms in every step: the sleep is no work the profiler sees, so the step overview
shows it as "other" (the TensorBoard plugin's Other), not as CPU work."""

import time

import torch
from torch.profiler import profile, schedule

model = torch.nn.Linear(16, 16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
with profile(schedule=schedule(wait=1, warmup=1, active=3)) as prof:
    for _ in range(8):
        loss = model(torch.ones(8, 16)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(0.02)
        prof.step()
