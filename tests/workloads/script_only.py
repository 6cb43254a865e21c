"""No workload() function: profiled as a whole run as __main__."""

import sys

import torch

if __name__ == "__main__":
    x = torch.ones(5, 7)
    print("script_only args:", sys.argv[1:])
    (x * 3).sum()
