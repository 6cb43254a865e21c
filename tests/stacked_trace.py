"""A small trace torch writes itself with ``with_stack`` and ``profile_memory``: torch
2.x's python_function frames, nn.Module events and [memory] instants, for the tests that
read one trace two ways and compare (in pieces, in two halves)."""

from __future__ import annotations

from pathlib import Path


def write_stacked_memory_trace(path: Path) -> Path:
    """Three training steps of a small model profiled into ``path``; returns it."""
    import torch  # here: the tests that import this module run without torch otherwise

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.profiler.profile(record_shapes=True, profile_memory=True, with_stack=True) as prof:
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.randn(8, 16)).sum().backward()
            optimizer.step()
    prof.export_chrome_trace(str(path))
    return path
