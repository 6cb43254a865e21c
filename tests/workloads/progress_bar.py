"""A tqdm-like progress bar: 25 MB of carriage-return updates on stderr with no newline
until the end, then one plain line on stdout; and a 6 MB line with no break at all."""

import sys

import torch

for step in range(250_000):
    sys.stderr.write(f"\rtraining: {step / 2500:6.2f}%|{'#' * (step % 60):<60}| {step}/250000")
sys.stderr.write("\n")
sys.stdout.write("x" * 6_000_000 + "\n")
print("done training")
(torch.ones(4, 4) @ torch.ones(4, 4)).sum()
