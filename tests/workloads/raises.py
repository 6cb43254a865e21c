"""Runs one op, then raises inside the profiled region."""

import torch


def workload():
    torch.ones(3, 3).sum()
    raise ValueError("boom from the workload")


if __name__ == "__main__":
    workload()
