"""How figures are written for people (pure: no torch, no textual).

A missing figure is written as an em dash, never as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan_tui.common.text import neutralise_controls

MISSING = "—"


def format_seconds(value: float | None) -> str:
    if value is None:
        return MISSING
    magnitude = abs(value)
    if magnitude >= 1:
        return f"{value:.3f} s"
    if magnitude >= 1e-3:
        return f"{value * 1e3:.3f} ms"
    return f"{value * 1e6:.1f} µs"


def format_signed_seconds(value: float | None) -> str:
    """A change in time: a regression reads ``+1.2 ms``, an improvement ``-1.2 ms``."""
    if value is None:
        return MISSING
    return ("+" if value > 0 else "") + format_seconds(value)


def format_ratio(value: float | None) -> str:
    """after / before as ``1.50x``, ``123.4x``, ``1,080x``: at most seven characters to
    99,999x (the compare table's column; ``1079.65x`` was cut there); None (nothing
    before to divide by) as the dash."""
    if value is None:
        return MISSING
    if abs(value) < 99.995:
        return f"{value:.2f}x"
    if abs(value) < 999.95:
        return f"{value:.1f}x"
    return f"{value:,.0f}x"


def format_duration(seconds: float | None) -> str:
    """A wall time as people say it: ``0.8 s``, ``42 s``, ``3 min 10 s``, ``2 h 5 min``."""
    if seconds is None:
        return MISSING
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def format_bytes(value: float | None, signed: bool = False) -> str:
    if value is None:
        return MISSING
    sign = "-" if value < 0 else ("+" if signed and value > 0 else "")
    magnitude = abs(value)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if magnitude >= size:
            return f"{sign}{magnitude / size:.1f} {unit}"
    return f"{sign}{int(magnitude)} B"


def format_shape(shape: object) -> str:
    if isinstance(shape, list):
        return "[" + ", ".join(format_shape(item) for item in shape) + "]"
    return str(shape)


def format_shapes(shapes: list) -> str:
    """Input shapes as torch prints them: ``[[32, 64], [64, 64]]``."""
    return format_shape(shapes)


def shapes_text(row: Mapping[str, Any]) -> str:
    """A row's input shapes as shown; a row of an operator-only compare, whose shapes were
    merged, says how many on each side: ``(shapes merged: 3 → 2)``."""
    merged = row.get("merged_shapes")
    if merged is None:
        return format_shapes(row["input_shapes"])
    if isinstance(merged, dict):
        merged = " → ".join(MISSING if merged.get(side) is None else str(merged[side])
                            for side in ("before", "after"))  # fmt: skip
    return f"(shapes merged: {merged})"


def describe_row(row: Mapping[str, Any]) -> str:
    """A row's operator and input shapes on one line, safe to print (``aten::mm [[8, 4]]``)."""
    return neutralise_controls(f"{row['operator']} {shapes_text(row)}")


def format_count(value: int | None) -> str:
    return MISSING if value is None else f"{value:,}"


def counted(number: int, noun: str) -> str:
    """``1 rank``, ``2 ranks``, ``1,200 calls``: a count with its noun, plural but for one."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


_SI_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def format_si(value: float | None, unit: str) -> str:
    """``1.56 GFLOP``, ``12.3 TFLOP/s``: a large figure with its SI prefix."""
    if value is None:
        return MISSING
    for prefix, size in _SI_PREFIXES:
        if abs(value) >= size:
            return f"{value / size:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def share_bar(fraction: float | None, width: int) -> str:
    """A left-aligned bar of ``width`` cells with eighth-block resolution."""
    if fraction is None or width <= 0:
        return " " * max(width, 0)
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    bar = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return bar.ljust(width)
