"""Interleaved timing: baseline and ours alternate in one run, medians with min-max."""

from __future__ import annotations

import argparse
import compileall
import mmap
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torchscan_tui


def measure(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def interleaved(baseline: Callable[[], object], ours: Callable[[], object], repeats: int):
    base, mine = [], []
    for _ in range(repeats):
        base.append(measure(baseline))
        mine.append(measure(ours))
    return base, mine


def report(title: str, base: list[float], mine: list[float], target: str) -> float:
    def line(name: str, samples: list[float]) -> str:
        return (
            f"  {name:<9} median {statistics.median(samples) * 1e3:9.1f} ms"
            f"   (min {min(samples) * 1e3:.1f}, max {max(samples) * 1e3:.1f}, n={len(samples)})"
        )

    ratio = statistics.median(mine) / statistics.median(base)
    print(title)
    print(line("baseline", base))
    print(line("ours", mine))
    print(f"  ratio     {ratio:.3f}   target {target}")
    return ratio


def benchmark_args(size: str | None = None, repeats: int = 3) -> argparse.Namespace:
    """The options every benchmark takes: ``--repeats`` and, if it has one, its input
    size (``--rows`` or ``--events``, 100,000 by default)."""
    parser = argparse.ArgumentParser()
    if size is not None:
        parser.add_argument(f"--{size}", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=repeats)
    return parser.parse_args()


def byte_compile_package() -> None:
    """Write torchscan_tui's bytecode, as pip does when it installs a package.

    Benchmarks that start our processes call this first. An editable install has no
    bytecode of its own, and where PYTHONDONTWRITEBYTECODE is set (as here) Python never
    writes it: each start would compile some forty modules again (~0.1 s), while the
    baselines' Textual and torch come compiled from their wheels.
    """
    compileall.compile_dir(Path(torchscan_tui.__file__).parent, quiet=1)


def minor_faults() -> int:
    """Page faults this process has taken so far (each new page of memory it touches)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def page_fault_seconds(pages: int = 8192) -> float:
    """What one first touch of a fresh page costs on this machine (the kernel's fault
    and zeroing), for reading a benchmark's time: 100k decoded rows are ~21k of them."""
    size = pages * mmap.PAGESIZE
    samples = []
    for _ in range(3):
        with mmap.mmap(-1, size) as memory:
            started = time.perf_counter()
            for offset in range(0, size, mmap.PAGESIZE):
                memory[offset] = 1
            first = time.perf_counter() - started
            started = time.perf_counter()
            for offset in range(0, size, mmap.PAGESIZE):
                memory[offset] = 1
            again = time.perf_counter() - started
        samples.append((first - again) / pages)
    return statistics.median(samples)


def print_fault_share(what: str, faults: list[int]) -> None:
    """Say how many page faults ``what`` took (median) and their time on this machine."""
    fault_cost = page_fault_seconds()
    median_faults = statistics.median(faults)
    print(
        f"{what} took {median_faults:,.0f} page faults (median), "
        f"{fault_cost * 1e6:.1f} us each on this machine: "
        f"{median_faults * fault_cost * 1e3:.0f} ms of the time below"
    )
