"""A training script: the sample transformer's blocks trained with AdamW, loop at top level."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "sample_workloads"))
from transformer import Block  # noqa: E402

torch.manual_seed(0)
model = torch.nn.Sequential(Block(), Block())
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randn(8, 64, 128)
for step in range(12):
    loss = model(tokens).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
