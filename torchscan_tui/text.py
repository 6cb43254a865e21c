"""Text that came from a workload, made safe to show (pure, no torch, no textual).

A workload's output, operator names and shapes can hold ESC sequences and other control
characters that would drive the user's terminal. Everything shown passes through
:func:`neutralise_controls` first: C0 and C1 controls (except tab) become visible
``\\xNN`` escapes.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def neutralise_controls(text: str) -> str:
    """Replace control characters (C0 except tab, DEL, C1) by visible escapes."""
    return _CONTROL.sub(_escape, text)


def decode_output_line(raw: bytes) -> str:
    """One line of a workload's output: decoded with replacement, CR stripped, made safe."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return neutralise_controls(raw.decode("utf-8", errors="replace"))
