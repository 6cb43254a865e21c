"""A big profile's groups summed in two halves, the later in a forked child
(analysis/groups.py): the same groups, in the same order, as summed in one pass
(issue 31, point 1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from forked_helpers import forked_recording
from proc_helpers import reaped

from torchscan_tui.analysis import groups
from torchscan_tui.analysis.aggregate import aggregate_events
from torchscan_tui.analysis.groups import Group, merged
from torchscan_tui.analysis.profiler_events import RawEvent
from torchscan_tui.common import forked
from torchscan_tui.common.forked import Forked, can_fork
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.formats.report import dumps_report
from torchscan_tui.formats.trace import reader
from torchscan_tui.formats.trace.columns import read_columns
from torchscan_tui.formats.trace.decode import decode_trace

DATA = Path(__file__).parent / "data"
PARENT = os.getpid()

needs_fork = pytest.mark.skipif(not can_fork(), reason="fork beside: Linux with two cores")


def _columns(path: Path):
    import gzip

    data = path.read_bytes()
    trace = decode_trace(gzip.decompress(data) if path.suffix == ".gz" else data)
    return read_columns([trace.events], str(path)).columns


def _summed_in(monkeypatch) -> list[int]:
    """The process that summed each later half, as group_nodes hands it to Forked."""
    made_in: list[int] = []
    monkeypatch.setattr(groups, "Forked", forked_recording(made_in))
    return made_in


@pytest.fixture(scope="module")
def profiled(tmp_path_factory) -> dict:
    """A small model profiled by torch with FLOPs, call stacks, shapes, memory and
    annotations: its trace file (call sites come from its frames) and its live events
    (FLOPs come from those; a trace has none)."""
    import torch

    from torchscan_tui.worker.profiling import extract_raw_events

    path = tmp_path_factory.mktemp("groups") / "stacked.json"
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))

    def profile(**options):
        with torch.profiler.profile(record_shapes=True, profile_memory=True, **options) as prof:
            for step in range(4):
                with torch.profiler.record_function(f"## step {step % 2} ##"):
                    model(torch.randn(8 + step % 2, 16)).sum().backward()
        return prof

    profile(with_stack=True).export_chrome_trace(str(path))
    # Live events without the Python tracer: its own events' names are not always UTF-8
    # (worker/call_sites.py leaves them out before reading one).
    live = extract_raw_events(profile(with_flops=True).profiler.kineto_results)
    return {"trace": path, "live": live}


def _events(name: str, profiled: dict):
    if name == "live":
        return list(profiled["live"])
    return _columns(profiled["trace"] if name == "stacked" else DATA / name)


@needs_fork
@pytest.mark.parametrize(
    "name",
    ["resnet50_2021_cuda.pt.trace.json.gz", "trace_diff_control.json.gz", "stacked", "live"],
)
def test_groups_summed_in_two_halves_equal_one_pass_in_every_field_and_order(
    monkeypatch, name, profiled
):
    """Real GPU traces (device time, kernels, callers), a torch-written trace with call
    sites and memory, and live events with FLOPs: the groups, compared as dataclasses."""
    one_pass = aggregate_events(_events(name, profiled)).groups
    made_in = _summed_in(monkeypatch)
    monkeypatch.setattr(groups, "SPLIT_FROM", 1)
    halves = aggregate_events(_events(name, profiled), split=True).groups
    assert len(made_in) == 1 and made_in[0] != PARENT, "the later half was summed in line"
    assert halves == one_pass
    if name != "resnet50_2021_cuda.pt.trace.json.gz":  # the one without user annotations
        assert any(group.callers for group in halves)
    if name in ("stacked", "live"):  # two annotations: a group's callers in their order
        assert any(len(group.callers) > 1 for group in halves)
    if name == "stacked":
        assert any(group.sites for group in halves)
    if name == "live":
        assert any(group.flops for group in halves)
        assert any(group.flops is None for group in halves)


@needs_fork
def test_a_big_trace_s_report_is_the_same_with_its_groups_summed_beside(monkeypatch):
    """Through the reader, as ``--json`` writes the report."""
    path = DATA / "resnet50_2021_cuda.pt.trace.json.gz"
    in_line, _ = open_profile(path)
    made_in = _summed_in(monkeypatch)
    monkeypatch.setattr(reader, "FORK_FROM_EVENTS", 1)
    monkeypatch.setattr(groups, "SPLIT_FROM", 1)
    beside, _ = open_profile(path)
    assert len(made_in) == 1 and made_in[0] != PARENT
    assert dumps_report(beside) == dumps_report(in_line)


def test_below_the_threshold_unasked_or_on_one_core_the_groups_are_summed_in_one_pass(
    monkeypatch,
):
    """On one core no child runs beside: the halves would be summed here one after the
    other, and merged, for nothing."""
    made_in = _summed_in(monkeypatch)
    columns = _columns(DATA / "mtia_inference.json.gz")
    aggregate_events(columns, split=True)  # 14k events: under SPLIT_FROM
    monkeypatch.setattr(groups, "SPLIT_FROM", 1)
    aggregate_events(columns)
    monkeypatch.setattr(forked, "cores", lambda: 1)
    aggregate_events(columns, split=True)
    assert made_in == []


@needs_fork
def test_a_child_that_dies_has_its_half_summed_here(monkeypatch):
    path = DATA / "resnet50_2021_cuda.pt.trace.json.gz"
    one_pass = aggregate_events(_columns(path)).groups
    summed = groups._keyed_groups

    def dies_in_a_child(figures, indices, *most):
        if os.getpid() != PARENT:
            os._exit(9)
        return summed(figures, indices, *most)

    monkeypatch.setattr(groups, "_keyed_groups", dies_in_a_child)
    monkeypatch.setattr(groups, "SPLIT_FROM", 1)
    assert aggregate_events(_columns(path), split=True).groups == one_pass


@needs_fork
def test_a_later_half_of_too_many_groups_is_summed_here_not_sent_back(monkeypatch):
    """Shapes that change at every call: a group a node or so. Pickling them back would
    cost more than summing them here (~10 us a group against ~1 us a node), so the child
    says so after numbering them and the parent sums that half itself: the same groups."""
    events = [
        RawEvent(f"aten::op{i % 7}", "CPU", False, 1, 10 * i, 10 * i + 5, i + 1, 0,
                 [[i % 900, 3]], False, "cpu_op", 0, False, 0)
        for i in range(2_000)
    ]  # fmt: skip
    one_pass = aggregate_events(events).groups
    summed, here = groups._keyed_groups, []

    def recorded(figures, indices, *most):
        if os.getpid() == PARENT:
            here.append(len(indices))
        return summed(figures, indices, *most)

    monkeypatch.setattr(groups, "_keyed_groups", recorded)
    monkeypatch.setattr(groups, "SPLIT_FROM", 1)
    assert aggregate_events(events, split=True).groups == one_pass
    assert here == [1_000, 1_000], "both halves summed here"
    few = [event._replace(shapes=[[event.start_ns % 3]]) for event in events]
    few_one_pass = aggregate_events(few).groups
    here.clear()
    assert aggregate_events(few, split=True).groups == few_one_pass
    assert here == [1_000], "few groups: the later half's come back from the child"


@needs_fork
def test_an_interrupt_while_the_first_half_is_summed_leaves_no_child(monkeypatch):
    """Ctrl-C during the pass (``--json`` of a big trace) stops the child summing the
    later half before the interrupt goes on up: nothing left running."""
    children: list[int | None] = []

    class Recorded(Forked):
        def __enter__(self):
            entered = super().__enter__()
            children.append(self.pid)
            return entered

    summed = groups._keyed_groups

    def interrupted_here(figures, indices, *most):
        if os.getpid() == PARENT:
            raise KeyboardInterrupt
        return summed(figures, indices, *most)

    monkeypatch.setattr(groups, "Forked", Recorded)
    monkeypatch.setattr(groups, "_keyed_groups", interrupted_here)
    monkeypatch.setattr(groups, "SPLIT_FROM", 1)
    with pytest.raises(KeyboardInterrupt):
        aggregate_events(_columns(DATA / "mtia_inference.json.gz"), split=True)
    (child,) = children
    assert child is not None and child != PARENT
    assert reaped(child)


def test_merged_halves_add_up_and_keep_first_appearance():
    """A group in both halves is summed; FLOPs counted by one half only are that half's
    (None only where neither counted); callers and sites keep the order they first met."""
    key = ("aten::mm", False, b"[[2, 2]]")
    mm_first = Group("aten::mm", [[2, 2]], "operator", calls=2, cpu_self_ns=10)
    mm_first.callers, mm_first.sites = {"a": 1}, {"x.py:1": 5}
    mm_later = Group("aten::mm", [[9]], "runtime", calls=3, cpu_self_ns=7, cpu_total_ns=20)
    mm_later.flops = 64
    mm_later.callers, mm_later.sites = {"b": 2, "a": 1}, {"y.py:2": 1, "x.py:1": 1}
    first = {key: mm_first, ("aten::add", False, b"[]"): Group("aten::add", [], "operator")}
    later = {("aten::relu", False, b"[]"): Group("aten::relu", [], "operator"), key: mm_later}
    both = merged(first, later)
    assert list(both) == [key, ("aten::add", False, b"[]"), ("aten::relu", False, b"[]")]
    mm = both[key]
    assert (mm.calls, mm.cpu_self_ns, mm.cpu_total_ns, mm.flops) == (5, 17, 20, 64)
    assert (mm.input_shapes, mm.kind) == ([[2, 2]], "operator")  # the first node's
    assert list(mm.callers.items()) == [("a", 2), ("b", 2)]
    assert list(mm.sites.items()) == [("x.py:1", 6), ("y.py:2", 1)]
    assert both[("aten::add", False, b"[]")].flops is None
