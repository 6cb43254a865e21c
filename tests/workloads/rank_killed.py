"""A two-rank gloo job whose rank 1 is killed outright (SIGKILL, as the OOM killer does)
at its third step, in the profile pass only, which runs first (argv[1] names a file
the first pass creates; the peak pass, second, finds it)."""

import os
import signal
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
second_pass = os.path.exists(sys.argv[1])
dist.barrier()
if rank == 0 and not second_pass:
    open(sys.argv[1], "w").close()
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(8):
    if rank == 1 and step == 3 and not second_pass:
        os.kill(os.getpid(), signal.SIGKILL)
    model(torch.ones(4, 8)).sum().backward()
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)
    optimizer.step()
dist.barrier()
dist.destroy_process_group()
