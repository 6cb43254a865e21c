"""Shared fixtures: paths to the sample and test workloads, and the interpreter to use."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_workloads"
WORKLOADS = Path(__file__).resolve().parent / "workloads"


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def workloads() -> Path:
    return WORKLOADS


@pytest.fixture
def samples() -> Path:
    return SAMPLES
