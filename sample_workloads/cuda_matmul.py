"""Written for CUDA; says so and runs on the CPU when no GPU is present."""

import sys

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    print("cuda_matmul: no GPU present, running on the CPU instead", file=sys.stderr)

a = torch.randn(512, 512, device=DEVICE)
b = torch.randn(512, 512, device=DEVICE)


def workload():
    out = a
    for _ in range(10):
        out = torch.relu(out @ b) / 512
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    return out


if __name__ == "__main__":
    workload()
    print("cuda_matmul: done on", DEVICE)
