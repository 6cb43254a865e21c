"""A two-rank gloo job whose workload attacks the files the session made for its ranks:
once every rank has joined, rank 0 puts a FIFO and a link to /dev/zero where they are
named and deletes the whole folder, then both ranks train as rank_train.py does."""

import os
import shutil

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
dist.barrier()  # every rank has opened its file by now (before this script ran)
if rank == 0:
    made = [value.rsplit(":", 2)[0] for name, value in os.environ.items()
            if name.startswith("TORCHSCAN_HANDOFF_")]  # fmt: skip
    for path in made:
        os.unlink(path)
        if path.endswith(".channel"):
            os.mkfifo(path)
        else:
            os.symlink("/dev/zero", path)
    if made:
        shutil.rmtree(os.path.dirname(made[0]))
dist.barrier()
model = torch.nn.Linear(32, 32)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(8):
    loss = model(torch.ones(16, 32)).sum()
    optimizer.zero_grad()
    loss.backward()
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)
    optimizer.step()
dist.barrier()
dist.destroy_process_group()
