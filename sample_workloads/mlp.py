"""A small MLP: forward passes over a batch. The `workload` function is what gets profiled."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512),
    torch.nn.ReLU(),
    torch.nn.Linear(512, 512),
    torch.nn.ReLU(),
    torch.nn.Linear(512, 10),
)
inputs = torch.randn(64, 256)


def workload():
    with torch.no_grad():
        for _ in range(20):
            model(inputs)


if __name__ == "__main__":
    workload()
    print("mlp: done")
