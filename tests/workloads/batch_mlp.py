"""A two-layer MLP whose batch size is its first argument: two runs of it differ in every
input shape but not in their operators (the operator-only compare's real case)."""

import sys

import torch

BATCH = int(sys.argv[1]) if len(sys.argv) > 1 else 8
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def workload():
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(BATCH, 32))
