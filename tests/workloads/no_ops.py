"""A workload that runs no torch op: the profile holds no row."""

import torch  # noqa: F401  (imported as a workload would, unused)


def workload():
    return sum(range(10))
