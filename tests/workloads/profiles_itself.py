"""A training script that profiles itself, as the PyTorch docs teach: a schedule of
wait 1, warm-up 1, active 3 and prof.step() after each step. Each step appends
"PID STEP" to argv[1]; its own trace handler appends "PID ready"."""

import os
import sys

import torch
from torch.profiler import profile, schedule


def main() -> None:
    log = sys.argv[1]
    model = torch.nn.Linear(16, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def ready(prof) -> None:
        with open(log, "a") as out:
            out.write(f"{os.getpid()} ready\n")

    with profile(schedule=schedule(wait=1, warmup=1, active=3), on_trace_ready=ready) as prof:
        for step in range(1, 21):
            loss = model(torch.ones(8, 16)).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()
            with open(log, "a") as out:
                out.write(f"{os.getpid()} {step}\n")


if __name__ == "__main__":
    main()
