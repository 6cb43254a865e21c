"""Raises KeyboardInterrupt inside the profiled region."""

import torch


def workload():
    torch.ones(3, 5).sum()
    raise KeyboardInterrupt


if __name__ == "__main__":
    pass
