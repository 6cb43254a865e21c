"""Writes message-shaped lines to every fd from 3 to 20: the worker's channel among them."""

import os

import torch

FORGED = (
    b'{"type": "rows"}\n',
    b'{"type": "meta"}\n',
    b'{"type": "rows", "rows": [1, "two"]}\n',
)


def workload():
    torch.ones(8, 8).sum()
    for fd in range(3, 21):
        for line in FORGED:
            try:
                os.write(fd, line)
            except OSError:
                pass
