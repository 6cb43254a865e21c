import torch

def workload(:
    pass
