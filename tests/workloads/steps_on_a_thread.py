"""A producer/consumer trainer: the main thread queues batches, a consumer thread trains
(forward, backward, optimizer.step()) and the main thread waits for it. Each step appends
"PID STEP" to argv[1]."""

import os
import queue
import sys
import threading

import torch

batches: queue.Queue = queue.Queue(maxsize=2)


def consume() -> None:
    model = torch.nn.Linear(16, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    step = 0
    while (batch := batches.get()) is not None:
        model(batch).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        with open(sys.argv[1], "a") as log:
            log.write(f"{os.getpid()} {step}\n")


consumer = threading.Thread(target=consume)
consumer.start()
for _ in range(20):
    batches.put(torch.ones(8, 16))
batches.put(None)
consumer.join()
