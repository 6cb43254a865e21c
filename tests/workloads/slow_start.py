"""Takes a second and a half to start (in both runs): time for RSS samples to be seen."""

import time

import torch

time.sleep(1.5)
weights = torch.ones(64, 64)


def workload():
    return (weights @ weights).sum()
