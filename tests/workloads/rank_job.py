"""A two-rank gloo job (under torch.distributed.run) where rank 1 does 100x the matmuls
(~10 ms more: a straggler a loaded machine cannot hide):
each rank writes its own trace, rank-N.json, into argv[1], as HTA's layout has them."""

import os
import sys

import torch
import torch.distributed as dist
from torch.profiler import profile

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.ones(64, 64)
with profile(record_shapes=True) as prof:
    for _ in range(3):
        y = x @ x
        if rank == 1:  # the straggler
            for _ in range(100):
                y = y @ x
        dist.all_reduce(y)
prof.export_chrome_trace(os.path.join(sys.argv[1], f"rank-{rank}.json"))
dist.barrier()  # no rank leaves while a peer still reads its last all_reduce
dist.destroy_process_group()
# torch's teardown under gloo aborts now and then ("terminate called without an active
# exception") after all is done: the traces are written, so leave without it.
sys.stdout.flush()
os._exit(0)
