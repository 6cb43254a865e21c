"""A training loop that catches BaseException around each step (a 'never crash' trainer):
a stop raised out of optimizer.step() is swallowed. Each step appends "PID STEP" to argv[1]."""

import os
import sys

import torch

model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, 13):
    try:
        model(torch.ones(4, 8)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    except BaseException:  # noqa: BLE001 - the point of this workload
        pass
    with open(sys.argv[1], "a") as log:
        log.write(f"{os.getpid()} {step}\n")
