"""Runs one op, then sys.exit(4) inside the profiled region."""

import sys

import torch


def workload():
    torch.ones(2, 2).mul(2)
    sys.exit(4)


if __name__ == "__main__":
    workload()
