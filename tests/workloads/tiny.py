"""A fast workload for tests: a matmul and an annotated cat."""

import torch
from torch.profiler import record_function

a = torch.ones(8, 16)
b = torch.ones(16, 64)


def workload():
    with record_function("tiny_block"):
        out = a @ b
        torch.cat([out, out])
    return out.sum()


if __name__ == "__main__":
    workload()
    print("tiny: done")
