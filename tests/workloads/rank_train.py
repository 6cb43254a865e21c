"""A two-rank training script for torch.distributed.run (gloo, CPU): gradients averaged
with all_reduce, an optimizer step each step; rank 1 does extra work (the straggler), or
with ``--equal`` every rank does the same extra work (no straggler)."""

import sys

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    # One thread a rank: two ranks of two threads each on a two-core machine take turns
    # unevenly, and equal ranks measured ~25% apart, step after step.
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(12):
        x = torch.ones(16, 32)
        if rank == 1 or "--equal" in sys.argv:  # ~10 ms of matmuls a step: above the noise
            waste = torch.ones(256, 256)
            for _ in range(20):
                waste = torch.tanh(waste @ waste / 256)
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        for parameter in model.parameters():
            dist.all_reduce(parameter.grad)
        optimizer.step()
    dist.barrier()  # no rank leaves while a peer still reads its last all_reduce
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
