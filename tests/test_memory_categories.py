"""Issue 30, point 3: memory by category, as torch's own memory profiler classifies it,
from the step after the window (stacks, shapes and memory recorded there)."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import SAMPLES, WORKLOADS, torchscan
from rich.console import Console

from torchscan_tui.analysis.memory_categories import MAX_POINTS, category_memory
from torchscan_tui.analysis.memory_timeline import category_lines
from torchscan_tui.ui.screens.memory_screen import draw_categories


def test_a_timeline_by_category_keeps_its_peak_and_each_categorys_highest():
    names = ["parameter", "gradient"]
    times = list(range(0, 5000, 10))  # 500 points, microseconds
    sizes = [[100, 0] for _ in times]
    sizes[123] = [100, 400]  # the peak
    sizes[400] = [100, 300]
    block = category_memory("cpu", names, times, sizes)
    assert block is not None
    assert block["peak_bytes"] == 500 and block["at_peak"] == [100, 400]
    assert block["peak_seconds"] == pytest.approx(1230e-6)
    assert block["largest"] == [100, 400]
    assert len(block["timeline"]) <= MAX_POINTS + 2
    assert [1230e-6, [100, 400]] in [[pytest.approx(t), s] for t, s in block["timeline"]]
    assert category_memory("cpu", names, [], []) is None


def _parameter_bytes() -> int:
    """The training script's model, built as it builds it: its parameters' bytes."""
    sys.path.insert(0, str(SAMPLES))
    try:
        import torch
        from transformer import Block

        model = torch.nn.Sequential(Block(), Block())
        return sum(p.numel() * p.element_size() for p in model.parameters())
    finally:
        sys.path.remove(str(SAMPLES))


@pytest.mark.slow
def test_a_training_steps_parameters_and_gradients_are_the_models_parameter_bytes(tmp_path):
    """The done-when: on a small training step (AdamW), torch's memory profiler finds the
    parameters (held throughout) and the gradients (at their highest, after backward)
    at exactly the model's parameter bytes; AdamW's state is twice that (exp_avg,
    exp_avg_sq) plus its step counters. Shown in headless, the text and the screen."""
    out = tmp_path / "r.json"
    result = torchscan(WORKLOADS / "train_transformer.py", "--json", out)
    assert result.returncode == 0, result.stderr
    categories = json.loads(out.read_text())["memory"]["categories"]
    (cpu,) = categories["devices"]
    figures = dict(
        zip(cpu["categories"], zip(cpu["at_peak"], cpu["largest"], strict=True), strict=True)
    )
    parameters = _parameter_bytes()
    assert figures["parameter"] == (parameters, parameters)
    assert figures["gradient"][1] == parameters
    assert 2 * parameters <= figures["optimizer state"][1] <= 2 * parameters + 4096
    assert cpu["peak_bytes"] == sum(cpu["at_peak"])
    assert "memory by category: cpu at the traced step's peak" in result.stderr
    assert category_lines(categories)[0] in result.stderr
    console = Console(width=100, color_system=None, record=True)
    console.print(draw_categories(categories, 96))
    drawn = console.export_text()
    assert "parameter" in drawn and "optimizer state" in drawn and "█" in drawn


@pytest.mark.slow
def test_without_a_traced_step_the_categories_say_why(tmp_path):
    out = tmp_path / "r.json"
    result = torchscan(WORKLOADS / "train_transformer.py", "--json", out, "--no-stack")
    assert result.returncode == 0, result.stderr
    categories = json.loads(out.read_text())["memory"]["categories"]
    assert categories == {"missing": "--no-stack was given"}
    assert "By category: none (--no-stack was given)." in str(draw_categories(categories, 80))
