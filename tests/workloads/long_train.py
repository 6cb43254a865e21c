"""A training script of EPOCHS epochs of STEPS steps, each step ~SLEEP seconds of waiting
(argv: EPOCHS STEPS SLEEP; default 3 epochs of 40 steps of 0.1 s): its profile window
ends within seconds, its whole run takes as long as asked."""

import sys
import time

import torch

epochs, steps, sleep = (
    (int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) > 3 else (3, 40, 0.1)
)
torch.manual_seed(0)
model = torch.nn.Linear(32, 32)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(epochs):
    for _ in range(steps):
        loss = model(torch.ones(8, 32)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(sleep)
    print(f"epoch {epoch} done", flush=True)
