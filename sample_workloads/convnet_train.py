"""One conv-net training step per iteration, with record_function annotations."""

import torch
from torch import nn
from torch.profiler import record_function

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(32, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
images = torch.randn(16, 3, 32, 32)
labels = torch.randint(0, 10, (16,))


def workload():
    for _ in range(3):
        with record_function("forward"):
            loss = loss_fn(model(images), labels)
        with record_function("backward"):
            optimizer.zero_grad()
            loss.backward()
        with record_function("optimizer_step"):
            optimizer.step()


if __name__ == "__main__":
    workload()
    print("convnet_train: done")
