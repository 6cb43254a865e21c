"""Issue 29, point 1: call sites for a live run, from one step after the window traced
with a TorchFunctionMode (worker/call_sites.py); the rows' times stay the window's."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLES, torchscan

from torchscan_tui.analysis.sites import (
    FROM_PYTHON_EVENTS,
    SITE_MARK,
    attach_step_sites,
    by_line,
    marked_sites,
    nested_sites,
    python_function_site,
    site_rows,
)
from torchscan_tui.formats.opening import open_profile

TRANSFORMER = SAMPLES / "transformer.py"


def _line_of(path: Path, text: str) -> int:
    """The number of the line of ``path`` holding ``text``: the tests name lines as a
    person reading the model would, not by number."""
    (number,) = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    return number


def test_an_op_takes_the_innermost_range_around_it_and_a_backward_op_its_forwards():
    """Ranges by hand: the forward ops under line A's range; the backward under line
    B's (``loss.backward()``) but charged to A through the sequence number; AccumulateGrad
    (no sequence number) stays on B; an op on another thread with no range has none."""
    events = [  # (name, thread, start, end, sequence number, backward)
        (f"{SITE_MARK}m.py(10): forward", 1, 0, 100, -1, False),
        ("aten::linear", 1, 10, 50, 5, False),
        ("aten::addmm", 1, 20, 30, 6, False),
        (f"{SITE_MARK}train.py(40): <module>", 1, 100, 300, -1, False),
        ("autograd::engine::evaluate_function: AddmmBackward0", 1, 110, 200, 6, True),
        ("aten::mm", 1, 120, 190, -1, False),
        ("autograd::engine::evaluate_function: AccumulateGrad", 1, 200, 250, -1, False),
        ("aten::mm", 2, 10, 20, -1, False),
        # a device's backward on autograd's thread (0, read before the forward thread)
        ("autograd::engine::evaluate_function: LinearBackward", 0, 400, 500, 5, True),
        ("aten::mm", 0, 410, 490, -1, False),
    ]
    names, threads, starts, ends, numbers, backward = map(list, zip(*events, strict=True))
    sites = nested_sites(marked_sites(names), threads, starts, ends, numbers, backward)
    assert sites == [
        "m.py(10): forward", "m.py(10): forward", "m.py(10): forward",
        "train.py(40): <module>", "m.py(10): forward", "m.py(10): forward",
        "train.py(40): <module>", None, "m.py(10): forward", "m.py(10): forward",
    ]  # fmt: skip


def test_a_rows_sites_are_the_traced_steps_shares_of_the_windows_self_time():
    table = {("aten::mm", "[[2, 2]]"): ({"a.py(1): f": 300, "b.py(2): g": 100}, 500)}
    rows = [
        {"operator": "aten::mm", "input_shapes": [[2, 2]], "cpu_self_seconds": 1.0},
        {"operator": "aten::add", "input_shapes": [], "cpu_self_seconds": 1.0},
    ]
    assert attach_step_sites(rows, table) == 1  # type: ignore[arg-type]
    assert rows[0]["sites"] == site_rows({"a.py(1): f": 600_000_000, "b.py(2): g": 200_000_000},
                                         1_000_000_000)  # fmt: skip
    assert [site["share"] for site in rows[0]["sites"]] == [0.6, 0.2]  # 20% at no site
    assert "sites" not in rows[1]


def _run(tmp_path: Path, script: Path, *options: str) -> tuple[dict, str]:
    """The script's report from ``--json``, each run to a file of its own: a test's second
    run would otherwise be refused (``--json`` does not overwrite without ``--force``)."""
    out = tmp_path / f"run{len(list(tmp_path.glob('run*.json')))}.json"
    result = torchscan(script, "--json", out, *options)
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text()), result.stderr


@pytest.mark.slow
def test_the_transformer_samples_top_line_is_its_mlp(tmp_path):
    """The done-when on sample_workloads/transformer.py: by line, the MLP's line first,
    the attention's lines next; the trace of the window holds none of the traced step.

    Its three forward passes are a few ms each: the MLP's line leads by ~3x here, but a
    stall of ~10 ms in an attention line reordered them in one of four clean-clone CI
    runs. So a second run is taken when the first's top line is not the MLP's: both
    reordered fails, as the sample's claim would then be wrong. Likewise for the
    attention's lines among the next five: in one CI run the residual add's line (a few
    hundred µs) passed the ``weights @ v`` line."""
    mlp_line = (TRANSFORMER, _line_of(TRANSFORMER, "self.down("))
    attention = {
        _line_of(TRANSFORMER, text) for text in ("self.qkv(x)", "torch.softmax(", "weights @ v")
    }
    for attempt in range(2):
        trace = tmp_path / f"t{attempt}.json"
        report, _ = _run(tmp_path, TRANSFORMER, "--trace", str(trace))
        assert report["context"]["call_sites"] is True
        lines = by_line(report["operators"])
        top = lines[0]
        next_lines = {line["line"] for line in lines[1:6]}
        if (Path(top["file"]), top["line"]) == mlp_line and attention <= next_lines:
            break
    assert (Path(top["file"]), top["line"]) == mlp_line
    assert attention <= next_lines
    assert SITE_MARK not in trace.read_text()


@pytest.mark.slow
def test_a_training_scripts_backward_counts_on_its_forward_lines(tmp_path, workloads):
    """The done-when on a real training script (AdamW, the loop at the top level): the
    MLP line first, with its backward; the loop's own lines hold only what they call.

    One traced step of a few ms, as in the sample's test above and the with_stack one
    below: a second run is taken when a stall puts another line first; both runs
    reordered fails."""
    script = workloads / "train_transformer.py"
    mlp_line = (TRANSFORMER, _line_of(TRANSFORMER, "self.down("))
    for _ in range(2):
        report, _ = _run(tmp_path, script)
        lines = by_line(report["operators"])
        top = lines[0]
        if (Path(top["file"]), top["line"]) == mlp_line:
            break
    assert (Path(top["file"]), top["line"]) == mlp_line
    assert any("Backward" in name or name == "aten::mm" for name in top["operators"])
    backward_line = _line_of(script, "loss.backward()")
    on_backward = next((line for line in lines if line["line"] == backward_line), None)
    if on_backward is not None:  # AccumulateGrad and the like: far below the model's lines
        assert on_backward["cpu_self_seconds"] < top["cpu_self_seconds"] / 2


@pytest.mark.slow
def test_no_stack_takes_none_and_says_why(tmp_path):
    report, _ = _run(tmp_path, TRANSFORMER, "--no-stack")
    context = report["context"]
    assert (
        context["call_sites"] is False and context["call_sites_missing"] == "--no-stack was given"
    )
    assert not any(row.get("sites") for row in report["operators"])


def test_a_python_function_frame_is_the_users_unless_a_library_holds_it():
    assert python_function_site("transformer.py(34): forward") == "transformer.py(34): forward"
    assert python_function_site("/home/u/proj/m.py(3): f") == "/home/u/proj/m.py(3): f"
    for name in ("torch/nn/modules/module.py(1739): _call_impl", "typing.py(426): inner",
                 "/usr/lib/python3.11/site-packages/x/y.py(1): z", "nn.Module: Linear_0",
                 "<built-in method add_ of Tensor object at 0x7f>"):  # fmt: skip
        assert python_function_site(name) is None, name


def _enclosing_function(path: Path, line: int) -> int | str:
    """The first line of the function holding ``line`` (what torch's Python tracer names
    a frame by), or ``<module>`` for a line outside any."""
    holding = [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.lineno <= line <= (node.end_lineno or 0)
    ]
    return max(holding) if holding else "<module>"


@pytest.mark.slow
def test_a_with_stack_trace_from_torch_opens_to_the_sites_of_a_live_run(tmp_path, workloads):
    """Point 6 and the done-when: the script records one step with torch's with_stack
    (Kineto python_function events); opened, its lines by CPU self time name the same
    functions, in the same order, as a live run of the same script. torch names a frame
    by its function's first line, a live run by the line itself: compared by function.

    Both samples are one step of a few ms: a stall in an attention line reordered them in
    one clean-clone CI run on a loaded machine, as it did the sibling test above. So a
    second pair of samples is taken when the first is out of order: both pairs out of
    order fails, as the sample's claim would then be wrong."""
    script = workloads / "train_transformer.py"

    def functions(report: dict) -> list[tuple[str, int | str]]:
        """The report's lines as the functions holding them, by CPU self time."""
        named: list[tuple[str, int | str]] = []
        for line in by_line(report["operators"]):
            path = TRANSFORMER if Path(line["file"]).name == TRANSFORMER.name else script
            key = (path.name, _enclosing_function(path, line["line"]))
            if key not in named:
                named.append(key)
        return named

    mlp = _enclosing_function(TRANSFORMER, _line_of(TRANSFORMER, "self.down("))
    attention = _enclosing_function(TRANSFORMER, _line_of(TRANSFORMER, "self.qkv(x)"))
    expected = [("transformer.py", mlp), ("transformer.py", attention)]
    for attempt in range(2):
        trace = tmp_path / f"stack{attempt}.json"
        environment = {**os.environ, "TRACE_WITH_STACK": str(trace)}
        recorded = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                  env=environment, timeout=300)  # fmt: skip
        assert recorded.returncode == 0, recorded.stderr
        opened, _ = open_profile(trace)
        assert opened["context"]["call_sites_from"] == FROM_PYTHON_EVENTS
        live, _ = _run(tmp_path, script)
        if functions(opened)[:2] == functions(live)[:2] == expected:
            break
    assert functions(opened)[:2] == functions(live)[:2] == expected


def test_a_step_after_the_window_that_raises_fails_nothing():
    """The window is whole when the traced step runs: a script that raises there (its
    own error, or the tracing's) loses the call sites, not the run."""
    import torch

    from torchscan_tui.worker.profiling import profile_workload
    from torchscan_tui.worker.steps import StepWindow, call_steps

    calls = []

    def step() -> None:
        calls.append(1)
        if len(calls) == 3:  # warm-up, the window's step, then the traced one
            raise RuntimeError("only after the window")
        torch.ones(8).sum()

    window = StepWindow(1, 1, source="workload()")
    report = profile_workload(call_steps(step, window), window=window)
    assert report["operators"] and report["context"]["call_sites"] is False
    missing = report["context"]["call_sites_missing"]
    assert (
        missing == "the step traced after the window raised (RuntimeError: only after the window)"
    )
