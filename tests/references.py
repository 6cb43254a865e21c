"""The figures of references nobody here wrote (the TensorBoard plugin, HTA), as the
tests compare ours with them: where they are kept and how close is close."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def reference(name: str) -> dict:
    """One of tests/data's reference files (each says what produced it)."""
    return json.loads((DATA / name).read_text())


def assert_breakdown_equals_htas(ours: dict, theirs: dict) -> None:
    """Idle, compute, non-compute and the span within 1% of HTA's (us)."""
    pairs = (
        ("idle_seconds", "idle_time(us)"),
        ("compute_seconds", "compute_time(us)"),
        ("non_compute_seconds", "non_compute_time(us)"),
        ("span_seconds", "kernel_time(us)"),
    )
    for field, key in pairs:  # fmt: skip
        assert ours[field] * 1e6 == pytest.approx(theirs[key], rel=0.01, abs=0.5), field
