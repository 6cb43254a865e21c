"""A wrapper optimizer whose step() calls its inner optimizer's step() (as Lookahead and
ZeroRedundancyOptimizer do): one iteration is one step, not two. Each iteration appends
"PID STEP" to argv[1]."""

import os
import sys

import torch


class Lookahead(torch.optim.Optimizer):
    def __init__(self, inner: torch.optim.Optimizer):
        self.inner = inner
        super().__init__(inner.param_groups, {})

    def step(self, closure=None):  # noqa: ANN001
        return self.inner.step(closure)


model = torch.nn.Linear(8, 8)
optimizer = Lookahead(torch.optim.SGD(model.parameters(), lr=0.01))
for step in range(1, 11):
    model(torch.ones(4, 8)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    with open(sys.argv[1], "a") as log:
        log.write(f"{os.getpid()} {step}\n")
