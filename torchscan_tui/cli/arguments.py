"""The command line: options, their checks, and which files are scripts."""

from __future__ import annotations

import argparse
import math
import os


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchscan-tui",
        description=(
            "Run a PyTorch workload, show its whole-process peak RSS (from the kernel) and "
            "its operators ranked by self time, grouped by input shape."
        ),
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        default=None,
        help="compare two reports or traces: prints the largest deltas, or writes --json OUT",
    )
    parser.add_argument(
        "--by",
        choices=["shape", "operator"],
        default="shape",
        help="with --compare: match rows by operator and input shapes (default), or by "
        "operator alone, each side's shapes merged (for a model whose shapes changed)",
    )
    parser.add_argument(
        "--fail-on-regression",
        type=_percentage,
        metavar="PCT",
        default=None,
        help="with --compare: exit 3 when total self time or a top-10 row is PCT%% slower",
    )
    parser.add_argument(
        "script",
        nargs="?",
        help="the workload script; or a saved report, a Chrome trace (.json, .json.gz) or a "
        "tensorboard_trace_handler directory to open (with no terminal, its top rows print "
        "as text)",
    )
    parser.add_argument(
        "--callable",
        dest="callable_name",
        metavar="NAME",
        default=None,
        help="the function to profile (default: workload, else the whole script)",
    )
    parser.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda", "mps"],
        default="auto",
        help="which profiler activities to use (the script places its tensors)",
    )
    parser.add_argument(
        "--row-limit",
        type=int,
        metavar="N",
        default=None,
        help="keep the top N rows (the context records the total)",
    )
    parser.add_argument(
        "--trace",
        metavar="PATH",
        default=None,
        help="also write a Chrome trace (Perfetto / chrome://tracing) here",
    )
    parser.add_argument(
        "--json", metavar="OUT", default=None, help="run without the UI and write the report to OUT"
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        default=None,
        help="headless only: cancel the run after SECONDS (default: no deadline)",
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite existing --json / --trace files"
    )
    parser.add_argument(
        "--nproc-per-node",
        type=_count(1),
        metavar="N",
        default=None,
        help="run both passes under torch.distributed.run with N ranks a node (one node, "
        "unless --nnodes, --node-rank and --rdzv-backend/endpoint/id are given: they are "
        "passed through): each rank's peak RSS and rows, the cross-rank view, the straggler",
    )
    ranks = parser.add_argument_group(
        "many nodes", "with --nproc-per-node, passed to torch.distributed.run as they are"
    )
    for option, meta in (("--nnodes", "N"), ("--node-rank", "K"), ("--rdzv-backend", "NAME"),
                         ("--rdzv-endpoint", "HOST:PORT"), ("--rdzv-id", "ID")):  # fmt: skip
        ranks.add_argument(option, metavar=meta, default=None, help="passed to torchrun")
    window = parser.add_argument_group(
        "step window",
        "A step is one optimizer.step() of any torch.optim optimizer (the script is not "
        "edited), or one call of workload(). The profile leaves out W warm-up steps, "
        "records N, and then ends the script (a script with no step is profiled whole).",
    )
    window.add_argument(
        "--warmup",
        type=_count(0),
        metavar="W",
        default=None,
        help="steps run before the profile starts (default 1)",
    )
    window.add_argument(
        "--steps",
        type=_count(1),
        metavar="N",
        default=None,
        help="steps profiled (default 5 for a training script, 1 for workload())",
    )
    window.add_argument(
        "--rss-steps",
        type=_count(1),
        metavar="K",
        default=None,
        help="end the peak-RSS pass after K steps (long jobs): the peak then covers the "
        "run up to step K, and the report says so (default: the whole run)",
    )
    window.add_argument(
        "--flops",
        action="store_true",
        help="count FLOPs per row and their FLOP/s (torch's with_flops: matmul, conv, add, "
        "mul); it adds about 10%% to the profiled CPU self times, so it is off by default",
    )
    window.add_argument(
        "--no-stack",
        action="store_true",
        help="do not trace the step after the window for call sites (the source lines of "
        "L and each row's 'called from'); the window's times never include that tracing",
    )
    window.add_argument(
        "--run-to-end",
        action="store_true",
        help="let the script run on after the profiled steps (default: end it there)",
    )
    parser.epilog = (
        "Arguments after -- are passed to the script: torchscan-tui train.py -- --epochs 1"
    )
    return parser


TORCHRUN_OPTIONS = ("nnodes", "node_rank", "rdzv_backend", "rdzv_endpoint", "rdzv_id")


def torchrun_options(options: argparse.Namespace) -> tuple[str, ...]:
    """The multi-node options given, as torch.distributed.run takes them."""
    passed: list[str] = []
    for name in TORCHRUN_OPTIONS:
        value = getattr(options, name, None)
        if value is not None:
            passed += [f"--{name.replace('_', '-')}", value]
    return tuple(passed)


MAX_PERCENT = 100_000.0  # a gate at 1000x slower gates nothing


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _percentage(text: str) -> float:
    """``--fail-on-regression``: a percentage from 0 to 100,000."""
    value = _finite(text)
    if not 0 <= value <= MAX_PERCENT:
        raise argparse.ArgumentTypeError(f"{text} is not a percentage from 0 to {MAX_PERCENT:,.0f}")
    return value


def _count(least: int):
    """A whole number of steps, at least ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{text} is less than {least}")
        return value

    return parse


def _seconds(text: str) -> float:
    """``--timeout``: a positive, finite number of seconds."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def protect_dash_paths(argv: list[str]) -> list[str]:
    """A file named like an option (``-x.py``) is the script, not an option: ``./-x.py``."""
    return [
        os.path.join(".", arg) if arg.startswith("-") and os.path.isfile(arg) else arg
        for arg in argv
    ]


SCRIPT_SUFFIXES = (".py", ".pyw")


def _is_python_script(script: str) -> bool:
    """A ``.py`` file, or one whose first line runs it with Python (``#!/usr/bin/env python``)."""
    if script.endswith(SCRIPT_SUFFIXES):
        return True
    try:
        with open(script, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def check_script(script: str) -> str | None:
    if not os.path.exists(script):
        return f"{script}: no such file; give the path of a Python script"
    if os.path.isdir(script):
        return f"{script} is a directory; give the path of a Python script"
    if not os.access(script, os.R_OK):
        return f"{script}: permission denied; make it readable"
    if not _is_python_script(script):
        return (
            f"{script} is not a Python script (.py), a report or a trace (.json, .json.gz): "
            "give one of those"
        )
    return None
