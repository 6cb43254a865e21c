"""Text that came from a workload, made safe to show (pure, no torch, no textual).

A workload's output, operator names and shapes can hold ESC sequences and other control
characters that would drive the user's terminal, and bidi overrides that would reorder
what is shown. Everything shown passes through :func:`neutralise_controls` first: C0 and C1
controls (except tab) become visible ``\\xNN`` escapes, bidi controls ``\\uNNNN``.
"""

from __future__ import annotations

import re

# C0 (but tab), DEL, C1; and the bidi marks, embeddings, overrides and isolates.
# Lone surrogates too: no terminal or UTF-8 file can take one.
_CONTROL = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralise_controls(text: str) -> str:
    """Replace control characters (C0 except tab, DEL, C1) and bidi controls by visible
    escapes."""
    return _CONTROL.sub(_escape, text)


def neutralise_lines(text: str) -> str:
    """:func:`neutralise_controls` for text of several lines: its line breaks are kept."""
    return "\n".join(map(neutralise_controls, text.split("\n")))


def decode_output_line(raw: bytes) -> str:
    """One line of a workload's output: decoded with replacement, CR stripped, made safe."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return neutralise_controls(raw.decode("utf-8", errors="replace"))


def exception_line(exc: BaseException, limit: int = 200) -> str:
    """``RuntimeError: boom``: an exception in one line, its first, at most ``limit``
    characters (a note or a reason, not the traceback)."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:limit]
