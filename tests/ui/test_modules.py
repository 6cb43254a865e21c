"""Issue 29, point 4: the nn.Module tree, from a live run's traced step (module ranges
opened by forward hooks) and from a trace recorded with with_stack (Kineto's
``nn.Module: X_N`` events): inclusive times add up, the root is the step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLES, WORKLOADS, torchscan
from textual.widgets import Tree

from torchscan_tui.analysis.modules import (
    ROOT,
    module_calls,
    module_label,
    module_paths,
    module_sources,
    module_tree,
)
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.module_screen import ModuleScreen
from torchscan_tui.ui.widgets.detail_pane import DetailPane

TRANSFORMER = SAMPLES / "transformer.py"


def _adds_up(nodes: list[dict], rows: list[dict]) -> None:
    """Each node's total is its own time and its children's; the root's is the step's
    (every row's CPU self time)."""
    by_path = {node["path"]: node for node in nodes}
    children: dict[str, float] = {}
    for node in nodes[1:]:
        parent = node["path"].rpartition("/")[0] or ROOT
        children[parent] = children.get(parent, 0.0) + node["cpu_total_seconds"]
    for path, node in by_path.items():
        below = children.get(path, 0.0)
        assert node["cpu_total_seconds"] >= below - 1e-9, path
        assert node["cpu_total_seconds"] == pytest.approx(
            node["cpu_self_seconds"] + below, abs=1e-9
        )
    assert nodes[0]["path"] == ROOT
    assert nodes[0]["cpu_total_seconds"] == pytest.approx(sum(r["cpu_self_seconds"] for r in rows))


def test_paths_by_nesting_and_a_tree_by_hand():
    labels = ["Net", "fc: Linear @ m.py(3): forward", None, "act: ReLU", None]
    threads = [1, 1, 1, 1, 1]
    starts = [0, 10, 12, 30, 32]
    ends = [100, 20, 18, 40, 38]
    paths = module_paths(labels, threads, starts, ends)
    assert paths == ["Net", "Net/fc: Linear", None, "Net/act: ReLU", None]
    assert module_sources(labels, paths) == {"Net/fc: Linear": "m.py(3): forward"}
    assert module_label("nn.Module: Linear_0") == "Linear_0" and module_label("aten::mm") is None
    rows = [
        {"operator": "aten::addmm", "input_shapes": [], "cpu_self_seconds": 3.0,
         "device_self_seconds": None},
        {"operator": "aten::relu", "input_shapes": [], "cpu_self_seconds": 1.0,
         "device_self_seconds": None},
        {"operator": "aten::sum", "input_shapes": [], "cpu_self_seconds": 0.5,
         "device_self_seconds": None},
    ]  # fmt: skip
    table = {
        ("aten::addmm", "[]"): ({"Net/fc: Linear": 10}, 10),
        ("aten::relu", "[]"): ({"Net/act: ReLU": 4}, 8),  # half of it in no module
    }
    block = module_tree(rows, table, module_calls(paths), "by hand", module_sources(labels, paths))
    assert block is not None
    nodes = block["nodes"]
    assert [n["path"] for n in nodes] == [ROOT, "Net", "Net/fc: Linear", "Net/act: ReLU"]
    assert [n["cpu_total_seconds"] for n in nodes] == [4.5, 3.5, 3.0, 0.5]
    assert nodes[0]["cpu_self_seconds"] == 1.0  # the sum and half the relu: in no module
    assert nodes[2]["source"] == "m.py(3): forward" and nodes[2]["calls"] == 1
    assert nodes[0]["device_total_seconds"] is None  # not measured: never a made-up 0
    _adds_up(nodes, rows)  # type: ignore[arg-type]
    assert module_tree(rows, {}, {}, "none") is None


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    out = tmp_path_factory.mktemp("live") / "r.json"
    result = torchscan(WORKLOADS / "train_transformer.py", "--json", out)
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text())


def _def_line(text: str) -> int:
    """The ``def`` line just above the line of transformer.py holding ``text``."""
    lines = TRANSFORMER.read_text().splitlines()
    (number,) = [n for n, line in enumerate(lines, 1) if text in line]
    return max(n for n in range(1, number) if lines[n - 1].strip().startswith("def "))


@pytest.mark.slow
def test_a_live_runs_tree_adds_up_and_names_the_models_modules(live):
    """The done-when on a real training script: the step's root, the two blocks, each
    with its attention and MLP and their Linear layers; parents >= their children; the
    user's modules carry their forward's line; backward time counts on its module."""
    block = live["modules"]
    nodes = block["nodes"]
    _adds_up(nodes, live["operators"])
    paths = {n["path"]: n for n in nodes}
    for index in ("0", "1"):
        for part in ("attention: Attention", "mlp: MLP", "mlp: MLP/up: Linear",
                     "attention: Attention/qkv: Linear"):  # fmt: skip
            assert f"Sequential/{index}: Block/{part}" in paths
    mlp = paths["Sequential/0: Block/mlp: MLP"]
    assert mlp["source"] == f"{TRANSFORMER}({_def_line('self.down(')}): forward"
    assert mlp["calls"] == 1  # one forward per step
    up = paths["Sequential/0: Block/mlp: MLP/up: Linear"]
    assert any(name == "aten::mm" for name in up["operators"])  # its backward's matmuls
    assert paths[ROOT]["cpu_self_seconds"] > 0  # the loss and AdamW: in no module


@pytest.mark.slow
def test_a_with_stack_trace_opens_to_the_same_tree(tmp_path, workloads, live):
    """Point 6: the same script's own with_stack trace gives the tree from Kineto's
    nn.Module events (torch names them Class_N), adding up the same way, the same shape
    as the live run's."""
    trace = tmp_path / "stack.json"
    environment = {**os.environ, "TRACE_WITH_STACK": str(trace)}
    script = str(workloads / "train_transformer.py")
    recorded = subprocess.run([sys.executable, script], capture_output=True, text=True,
                              env=environment, timeout=300)  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    report, _ = open_profile(trace)
    nodes = report["modules"]["nodes"]
    _adds_up(nodes, report["operators"])
    paths = {n["path"] for n in nodes}
    assert "Sequential_0/Block_0/MLP_0/Linear_2" in paths
    shape = sorted(
        (n["depth"], n["name"].split(":")[-1].strip().rsplit("_", 1)[0]) for n in nodes[1:]
    )
    live_shape = sorted(
        (n["depth"], n["name"].split(":")[-1].strip()) for n in live["modules"]["nodes"][1:]
    )
    assert shape == live_shape


@pytest.mark.slow
async def test_t_shows_the_tree_and_a_module_without_a_source_says_so(live, tmp_path, until):
    saved = tmp_path / "live.json"
    saved.write_text(json.dumps(live))
    report, source = open_profile(saved)
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await until(pilot, lambda: bool(app.main_screen.view.rows))
        await pilot.press("T")
        await until(pilot, lambda: isinstance(app.screen, ModuleScreen))
        tree = app.screen.query_one(Tree)
        (step,) = tree.root.children  # the step: its own time is the loss's, AdamW's
        assert str(step.label).startswith("(step)  total")
        (model,) = step.children
        assert str(model.label).startswith("Sequential  total")
        blocks = [str(node.label).split("  ")[0] for node in model.children]
        assert sorted(blocks) == ["0: Block", "1: Block"]  # opened: the model's blocks shown
        await pilot.press("e")  # the cursor is on the step: no module, no source
        await pilot.pause()
        status = str(app.screen.query_one("#modules-status").render())
        assert "its forward's source is not known here" in status
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main_screen)


async def test_t_on_a_profile_without_modules_says_how_to_get_them(until):
    report, source = open_profile(Path(__file__).parent.parent / "data" / "alexnet_cuda.json.gz")
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(160, 30), notifications=True) as pilot:
        await until(pilot, lambda: bool(app.main_screen.view.rows))
        assert app.main_screen.check_action("modules", ()) is False
        await pilot.press("T")
        await pilot.pause()
        assert not isinstance(app.screen, ModuleScreen)
        assert any("No module tree" in str(n.message) for n in app._notifications)


@pytest.mark.slow
async def test_the_detail_pane_shows_a_sites_frames_and_f_unfolds_torchs(live, tmp_path, until):
    """Point 2: a row's call site with the user's frames outside it (the block's forward,
    the training loop's line); torch's frames inside it folded, F shows them."""
    saved = tmp_path / "live.json"
    saved.write_text(json.dumps(live))
    report, source = open_profile(saved)
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await until(pilot, lambda: bool(app.main_screen.view.rows))
        await pilot.press("slash", *"addmm [128, 512]", "enter", "enter")  # MLP's up: Linear
        await until(pilot, lambda: app.query_one(DetailPane).display)
        detail = str(app.query_one("#detail-body").render())
        mlp = _def_line("self.down(") + 1
        assert f"called from       {TRANSFORMER}({mlp}): forward" in detail
        block = _def_line("x + self.mlp(") + 2
        assert f"← transformer.py({block}): forward ← train_transformer.py(" in detail
        assert "folded: F shows them" in detail and "inside:" not in detail
        await pilot.press("F")
        await pilot.pause()
        detail = str(app.query_one("#detail-body").render())
        assert "inside: linear.py(" in detail and "folded" not in detail
