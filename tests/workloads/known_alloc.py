"""A training loop that holds one known tensor (1000 x 1000 float32: 4,000,000 bytes)
through its 4th step only, so the allocator's peak is there (issue 30)."""

import torch

model = torch.nn.Linear(16, 16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(1, 9):
    held = torch.ones(1000, 1000) if step == 4 else None
    loss = model(torch.ones(8, 16)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    del held
