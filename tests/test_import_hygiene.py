"""The engine runs without textual or rich, and the UI process never imports torch.

Every module of every package is found by walking the package (not listed, and not only
the top level), so a module added or moved anywhere is checked from its first day; the
static contracts of ``pyproject.toml`` are run by tests/test_import_contracts.py.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import torchscan_tui

ALL_MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(torchscan_tui.__path__, "torchscan_tui.")
    if not info.name.endswith("__main__")  # importing those runs the command
)
ENGINE_LAYERS = ("common", "analysis", "formats", "run")


def modules_in(*packages: str) -> list[str]:
    prefixes = tuple(f"torchscan_tui.{package}" for package in packages)
    return [
        name
        for name in ALL_MODULES
        if name in prefixes or name.startswith(tuple(p + "." for p in prefixes))
    ]


ENGINE_MODULES = ["torchscan_tui", *modules_in(*ENGINE_LAYERS)]
WORKER_MODULES = modules_in("worker")
UI_SIDE_MODULES = modules_in("ui", "cli")


def test_the_walk_finds_every_layer_and_nested_package():
    """A walk that silently found nothing (after a move, say) would check nothing."""
    for package in (*ENGINE_LAYERS, "worker", "ui", "cli"):
        assert len(modules_in(package)) >= 2, package
    assert "torchscan_tui.formats.trace.decode" in ALL_MODULES
    assert "torchscan_tui.ui.widgets.operator_table" in ALL_MODULES
    assert set(ALL_MODULES) == set(ENGINE_MODULES[1:] + WORKER_MODULES + UI_SIDE_MODULES)


def loaded_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(result.stdout.split())


@pytest.mark.slow
@pytest.mark.parametrize("module", ENGINE_MODULES)
def test_engine_module_imports_neither_textual_rich_nor_torch(module):
    loaded = loaded_after_import(module)
    assert not {"textual", "rich", "torch"} & loaded


@pytest.mark.parametrize("module", WORKER_MODULES)
def test_worker_module_imports_no_ui(module):
    loaded = loaded_after_import(module)
    assert not {"textual", "rich"} & loaded


@pytest.mark.slow
@pytest.mark.parametrize("module", UI_SIDE_MODULES)
def test_ui_and_cli_modules_never_import_torch(module):
    assert "torch" not in loaded_after_import(module)


def test_the_apps_start_on_a_file_imports_no_workload_session_nor_headless_runner():
    """A report's or a trace's first painted row waits for every import on its way: the
    command and the app import the workload's session (processes, handoffs, rank files)
    only when a workload runs, and the headless runner only for ``--json``/``--compare``
    (issue 31: ~30 ms of a ~340 ms first paint)."""
    loaded = loaded_after_import("torchscan_tui.cli.command, torchscan_tui.ui.app")
    assert "torchscan_tui.ui.app" in loaded  # the import itself ran
    assert not {"torchscan_tui.run.session", "torchscan_tui.cli.headless"} & loaded


@pytest.mark.slow
def test_the_ui_process_never_imports_torch(tmp_path):
    """Import the app and run it on a live workload in a subprocess: torch stays out."""
    script = tmp_path / "work.py"
    script.write_text("import torch\ndef workload():\n    torch.ones(2, 2).sum()\n")
    code = f"""
import asyncio, sys
from torchscan_tui.run.config import RunConfig
from torchscan_tui.ui.app import create_app

async def main():
    app = create_app(config=RunConfig(script={str(script)!r}, device="cpu"))
    async with app.run_test() as pilot:
        while app.main_screen.run_finished_count < 1:
            await pilot.pause()
        assert app.main_screen.state.phase == "done", app.main_screen.state.message
        assert app.main_screen.view.rows
asyncio.run(main())
print("torch" in sys.modules, "textual" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]
