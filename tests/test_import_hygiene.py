"""The engine runs without textual or rich, and the UI process never imports torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

ENGINE_MODULES = [
    "torchscan_tui",
    "torchscan_tui.process",
    "torchscan_tui.aggregate",
    "torchscan_tui.ranking",
    "torchscan_tui.report",
    "torchscan_tui.protocol",
    "torchscan_tui.session",
    "torchscan_tui.cli",
    "torchscan_tui.atomic",
    "torchscan_tui.text",
    "torchscan_tui.diagnostics",
]


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


@pytest.mark.parametrize("module", ["torchscan_tui.worker", "torchscan_tui.profiling"])
def test_torch_side_imports_no_ui(module):
    loaded = loaded_after_import(module)
    assert not {"textual", "rich"} & loaded
