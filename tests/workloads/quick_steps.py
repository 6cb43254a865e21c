"""workload(): one tiny op; run with a long warm-up, its steps come by the thousand."""

import torch

ones = torch.ones(2, 2)


def workload() -> None:
    ones.add(1)
