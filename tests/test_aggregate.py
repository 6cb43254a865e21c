"""Grouping agrees with key_averages(group_by_input_shape=True) on real profiles.

The recorded-event tests at the end stand in for a GPU that this machine does not have:
they feed hand-built CUDA-shaped events (named *_mock_gpu) through the same grouping.
"""

from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from torchscan_tui.aggregate import aggregate_events
from torchscan_tui.events import RawEvent
from torchscan_tui.profiling import extract_raw_events


def _profile(fn):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as p:
        fn()
    return p


def _compare(prof):
    ours = aggregate_events(extract_raw_events(prof.profiler.kineto_results))
    theirs = prof.key_averages(group_by_input_shape=True)
    mine = {(g.operator, str(g.input_shapes)): g for g in ours.groups}
    reference = {(e.key, str(e.input_shapes)): e for e in theirs}
    assert set(mine) == set(reference)
    for key, event in reference.items():
        group = mine[key]
        assert group.calls == event.count, key
        assert group.cpu_net_bytes == event.self_cpu_memory_usage, key
        assert abs(group.cpu_self_ns / 1000 - event.self_cpu_time_total) < 0.01, key
    return ours


def _training_steps():
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = torch.randn(8, 32)
    for _ in range(5):
        with record_function("step"):
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        torch.cat([batch, batch])


def test_agrees_with_key_averages_on_a_training_loop():
    aggregation = _compare(_profile(_training_steps))
    step = [g for g in aggregation.groups if g.operator == "step"]
    assert step and step[0].kind == "annotation" and step[0].calls == 5
    addmm = [g for g in aggregation.groups if g.operator == "aten::addmm"]
    assert addmm and all(g.callers.get("step") for g in addmm)


def test_agrees_on_nested_same_name_annotations_and_memory_outside_ops():
    def nested():
        with record_function("outer"):
            with record_function("outer"):
                torch.ones(64, 64).sum()
        keep = torch.empty(1000)  # allocations attributed to ops and to no op at all
        del keep

    _compare(_profile(nested))


def test_agrees_on_many_shapes():
    def shapes():
        for size in range(1, 40):
            torch.ones(size, 3) @ torch.ones(3, size)

    aggregation = _compare(_profile(shapes))
    matmuls = [g for g in aggregation.groups if g.operator == "aten::mm"]
    assert len(matmuls) == 39


def _event(name, device, start, end, corr=0, linked=0, thread=1, shapes=None, **extra):
    return RawEvent(name, device, False, thread, start, end, corr, linked, shapes or [], **extra)


def test_kernels_count_as_device_self_time_of_their_launching_op_mock_gpu():
    events = [
        _event("aten::mm", "CPU", 0, 100, corr=7, shapes=[[4, 4], [4, 4]]),
        _event(
            "cudaLaunchKernel",
            "CPU",
            10,
            30,
            corr=8,
            linked=7,
            thread=99,
            activity_type="cuda_runtime",
        ),
        _event("gemm_kernel", "CUDA", 200, 260, corr=9, linked=7, thread=5, activity_type="kernel"),
        _event(
            "gemm_kernel", "CUDA", 300, 310, corr=10, linked=7, thread=5, activity_type="kernel"
        ),
    ]
    aggregation = aggregate_events(events)
    rows = {g.operator: g for g in aggregation.groups}
    assert set(rows) == {"aten::mm", "cudaLaunchKernel"}
    assert rows["aten::mm"].device_self_ns == 70
    # The runtime event moved to the op's thread, so it is the op's child.
    assert rows["aten::mm"].cpu_self_ns == 80
    assert rows["cudaLaunchKernel"].kind == "runtime"
    assert aggregation.device_event_count == 2


def test_only_child_with_the_parents_name_is_folded_like_torch():
    events = [
        _event("aten::linear", "CPU", 0, 100, corr=1),
        _event("aten::linear", "CPU", 10, 90, corr=2),
        _event("aten::addmm", "CPU", 20, 50, corr=3),
    ]
    rows = {g.operator: g for g in aggregate_events(events).groups}
    assert rows["aten::linear"].calls == 1
    assert rows["aten::linear"].cpu_self_ns == 70
    assert rows["aten::addmm"].cpu_self_ns == 30


def test_async_events_count_calls_but_no_self_time():
    events = [RawEvent("async_op", "CPU", True, 1, 0, 50, 1, 0, [])]
    (group,) = aggregate_events(events).groups
    assert group.calls == 1 and group.cpu_self_ns == 0
