"""The layer and dependency contracts of ``pyproject.toml`` hold, and would catch a breach.

import-linter reads every import statically (including those inside functions), so it
sees what a runtime import check cannot: an import on a path no test takes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=300,
    )


def test_the_contracts_are_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package and its contracts with one import added to ``module``."""
    shutil.copytree(ROOT / "torchscan_tui", tmp_path / "torchscan_tui")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n\ndef _breach():\n    {line}\n")
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("torchscan_tui.analysis.row_view", "import textual", "Only the UI imports textual"),
        ("torchscan_tui.ui.app", "import torch", "Only the worker imports torch"),
        ("torchscan_tui.formats.report", "import torchscan_tui.run.session", "Layers"),
        ("torchscan_tui.run.session", "import torchscan_tui.worker.main", "Layers"),
        ("torchscan_tui.worker.main", "import torchscan_tui.ui.app", "Layers"),
    ],
)
def test_a_forbidden_import_breaks_a_contract(tmp_path, module, line, broken):
    result = lint_imports(copy_with(tmp_path, module, line))
    assert result.returncode != 0
    assert f"{broken}" in result.stdout and "BROKEN" in result.stdout, result.stdout
