"""A training script as people write them: argparse, a DataLoader with worker processes,
an optimizer, several epochs, no workload(). Each step appends "PID STEP" to --log, so a
test can tell how far each pass (peak RSS, profile) ran."""

import argparse
import os

import torch
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(320, 16), torch.randn(320, 1))
    loader = DataLoader(data, batch_size=32, num_workers=2)  # 10 steps an epoch
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    step = 0
    for _ in range(args.epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            try:
                optimizer.step()
            except Exception:  # a script that swallows errors must still end at the window
                pass
            step += 1
            with open(args.log, "a") as log:
                log.write(f"{os.getpid()} {step}\n")


if __name__ == "__main__":
    main()
