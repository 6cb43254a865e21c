"""Target 3: post-processing a 100k-event profile into grouped rows.

Baseline: what torch does for key_averages(group_by_input_shape=True): parse the Kineto
results into FunctionEvents (``prof.events()``) and average them. Ours: read the Kineto
events directly and group them (``extract_raw_events`` + ``aggregate_events``). Both run
on the same profile, interleaved, and the groups are compared first: same keys, counts,
self CPU time and net bytes, or the benchmark fails.

    python -m benchmarks.aggregation [--events 100000] [--repeats 3]
"""

from __future__ import annotations

import torch
from torch.autograd.profiler import profile as autograd_profile
from torch.profiler import ProfilerActivity, profile, record_function

from torchscan_tui.analysis.aggregate import aggregate_events
from torchscan_tui.common.gcpause import gc_paused
from torchscan_tui.worker.profiling import extract_raw_events

from ._timing import benchmark_args, interleaved, report


def make_profile(target_events: int):
    """A training-like loop sized so the profile holds about ``target_events`` events."""
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = torch.randn(4, 16)
    per_step = 140  # events one step makes, roughly
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as p:
        for step in range(max(target_events // per_step, 1)):
            with record_function("step"):
                loss = model(batch[: 1 + step % 4]).sum()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
    return p


def torch_baseline(prof) -> dict:
    """events() parse + key_averages, from scratch each time (torch caches the parse)."""
    autograd = prof.profiler
    assert isinstance(autograd, autograd_profile)
    autograd._function_events = None
    autograd._needs_processing = True
    averages = prof.key_averages(group_by_input_shape=True)
    return {(e.key, str(e.input_shapes)): e for e in averages}


def ours(prof) -> dict:
    """What profile_workload does after the profiler stops (collector paused, as there;
    a CPU-only profile has no device activity, so no correlation ids are read)."""
    with gc_paused():
        events = extract_raw_events(prof.profiler.kineto_results, device_activity=False)
        aggregation = aggregate_events(events)
    return {(g.operator, str(g.input_shapes)): g for g in aggregation.groups}


def check_agreement(prof) -> int:
    reference, mine = torch_baseline(prof), ours(prof)
    assert set(reference) == set(mine), set(reference) ^ set(mine)
    for key, event in reference.items():
        group = mine[key]
        assert group.calls == event.count, key
        assert group.cpu_net_bytes == event.self_cpu_memory_usage, key
        assert abs(group.cpu_self_ns / 1000 - event.self_cpu_time_total) < 0.01, key
    return len(reference)


def main() -> None:
    args = benchmark_args("events")
    prof = make_profile(args.events)
    events = len(prof.profiler.kineto_results.events())
    groups = check_agreement(prof)
    print(
        f"profile: {events:,} Kineto events, {groups:,} groups; groups, counts, self CPU "
        "time and net bytes identical to key_averages(group_by_input_shape=True)"
    )
    base, mine = interleaved(lambda: torch_baseline(prof), lambda: ours(prof), args.repeats)
    report(
        "post-processing into grouped rows (events() + key_averages vs ours)", base, mine, "<= 0.3"
    )


if __name__ == "__main__":
    main()
