"""Spikes resident memory briefly: a ~256 MiB temporary that is freed right away.

The peak RSS panel shows the spike even though the steady state is small: the figure is
the kernel's high-water mark, not a sample.
"""

import torch


def workload():
    small = torch.ones(256, 256)
    spike = torch.ones(64, 1024, 1024)  # 256 MiB of float32, touched
    total = float(spike.sum())
    del spike
    return float(small.sum()) + total


if __name__ == "__main__":
    print("memory_spike:", workload())
