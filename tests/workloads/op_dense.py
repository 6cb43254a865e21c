"""A training script whose steps are dense in small ops (as two LBFGS steps of
time_sequence_prediction were: 3.6M events): each step adds --ops small tensors one at a
time, then takes an SGD step. Issue 28, point 2."""

import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=4000)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    weight = torch.nn.Parameter(torch.ones(8, 8))
    optimizer = torch.optim.SGD([weight], lr=0.001)
    for _ in range(args.steps):
        total = weight
        for _ in range(args.ops):
            total = total + 1
        optimizer.zero_grad()
        total.sum().backward()
        optimizer.step()


if __name__ == "__main__":
    main()
