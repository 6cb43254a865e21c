"""A training script: the sample transformer's blocks trained with AdamW, loop at top level.

With ``TRACE_WITH_STACK=PATH`` in its environment it records its 4th step itself with
torch.profiler's ``with_stack`` and writes that trace to PATH (the call sites a trace from
torch gives, against the ones a live run of this same script gives: tests/test_call_sites.py).
"""

import contextlib
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "sample_workloads"))
from transformer import Block  # noqa: E402

TRACE = os.environ.get("TRACE_WITH_STACK")

torch.manual_seed(0)
model = torch.nn.Sequential(Block(), Block())
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randn(8, 64, 128)
for step in range(12):
    profiled = step == 3 and TRACE
    recording = (
        torch.profiler.profile(record_shapes=True, with_stack=True)
        if profiled
        else contextlib.nullcontext()
    )
    with recording as profile:
        loss = model(tokens).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if profiled:
        profile.export_chrome_trace(TRACE)
