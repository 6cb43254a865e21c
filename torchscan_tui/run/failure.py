"""Where a failed workload raised: the user's innermost frame of a traceback (pure).

A traceback's last frame is often deep in torch (``torch/nn/functional.py``) or the
standard library; the line to fix is the user's own. A frame is the user's when its file
is not in an installed package, the standard library or this tool.
"""

from __future__ import annotations

import re
import sysconfig
from collections.abc import Iterable
from pathlib import Path

TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)(?:, in (?P<func>.+))?')
_OURS = str(Path(__file__).resolve().parents[1])  # the torchscan_tui package
_STDLIB = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")})
_INSTALLED = ("site-packages", "dist-packages")


def _is_users(file: str) -> bool:
    """Not the standard library, an installed package, this tool, or ``<frozen ...>``."""
    if file.startswith(("<", _OURS, *_STDLIB)):
        return False
    return not any(part in _INSTALLED for part in Path(file).parts)


def where_it_raised(traceback_lines: Iterable[str]) -> str | None:
    """``train.py:42 in step``: the innermost frame in the user's code, else the
    innermost frame of all; None without a frame."""
    frames = [found for line in traceback_lines if (found := TRACEBACK_FRAME.match(line))]
    if not frames:
        return None
    users = [frame for frame in frames if _is_users(frame["file"])]
    frame = (users or frames)[-1]
    where = f"{frame['file']}:{frame['line']}"
    return f"{where} in {frame['func']}" if frame["func"] else where
