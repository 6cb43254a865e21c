"""The engine runs without textual or rich, and the UI process never imports torch."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import torchscan_tui

# Every module of the package but the UI and the torch side (and __main__, which runs
# the command): found, not listed, so a new engine module is checked from its first day.
TORCH_SIDE = {"torchscan_tui.worker", "torchscan_tui.profiling"}
ENGINE_MODULES = ["torchscan_tui"] + sorted(
    info.name
    for info in pkgutil.iter_modules(torchscan_tui.__path__, "torchscan_tui.")
    if not info.ispkg and info.name not in TORCH_SIDE | {"torchscan_tui.__main__"}
)


def loaded_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(result.stdout.split())


@pytest.mark.parametrize("module", ENGINE_MODULES)
def test_engine_module_imports_neither_textual_rich_nor_torch(module):
    loaded = loaded_after_import(module)
    assert not {"textual", "rich", "torch"} & loaded


@pytest.mark.parametrize("module", sorted(TORCH_SIDE))
def test_torch_side_imports_no_ui(module):
    loaded = loaded_after_import(module)
    assert not {"textual", "rich"} & loaded


def test_the_ui_process_never_imports_torch(tmp_path):
    """Import the app and run it on a live workload in a subprocess: torch stays out."""
    script = tmp_path / "work.py"
    script.write_text("import torch\ndef workload():\n    torch.ones(2, 2).sum()\n")
    code = f"""
import asyncio, sys
from torchscan_tui.session import RunConfig
from torchscan_tui.ui.app import create_app

async def main():
    app = create_app(config=RunConfig(script={str(script)!r}, device="cpu"))
    async with app.run_test() as pilot:
        while app.run_finished_count < 1:
            await pilot.pause()
        assert app.state.phase == "done", app.state.message
        assert app.view.rows
asyncio.run(main())
print("torch" in sys.modules, "textual" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]
