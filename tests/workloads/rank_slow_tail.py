"""A two-rank gloo training script (torch.distributed.run) whose rank 1 takes 4 s more
over its last step, after the step's all_reduce: rank 0's window ends and its rows go
out while rank 1 is still working (the live per-rank streaming's real case)."""

import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.Linear(16, 16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(2):
    loss = model(torch.ones(4, 16)).sum()
    optimizer.zero_grad()
    loss.backward()
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)
    if rank == 1 and step == 1:
        time.sleep(4)  # the last step's tail: no collective waits on it
    optimizer.step()
