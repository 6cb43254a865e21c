"""A two-rank gloo job (under torch.distributed.run) where rank 1 does 1500 more matmuls a
step (~18 ms more here, profiled: a straggler a loaded machine cannot hide; 100 more, ~1 ms,
lost to a 2.4 ms hiccup of rank 0's in a full CI run):
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
            for _ in range(1500):
                y = y @ x
        dist.all_reduce(y)
prof.export_chrome_trace(os.path.join(sys.argv[1], f"rank-{rank}.json"))
dist.barrier()  # no rank leaves while a peer still reads its last all_reduce
dist.destroy_process_group()
# torch's teardown under gloo aborts now and then ("terminate called without an active
# exception") after all is done: the traces are written, so leave without it.
sys.stdout.flush()
os._exit(0)
