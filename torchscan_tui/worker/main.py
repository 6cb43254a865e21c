"""The profile worker: ``python -m torchscan_tui.worker SCRIPT [--callable NAME] [-- ARGS]``.

It loads the script without running its ``__main__`` block, calls ``workload`` (or the
named callable) once under :func:`profile_workload`, and sends phases, the report's meta,
the ranked rows in batches and a final done/error message on the channel fd given by
``--channel-fd``. A script without such a callable is profiled as a whole run as
``__main__``. Nothing is ever written to stdout: that belongs to the workload.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import runpy
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchscan_tui.formats.report import head_of
from torchscan_tui.formats.report_schema import Report
from torchscan_tui.run.phases import WorkerPhase
from torchscan_tui.run.protocol import (
    ROW_BATCH,
    ChannelWriter,
    DoneMessage,
    ErrorMessage,
    HeadMessage,
    PhaseMessage,
    RowsMessage,
)
from torchscan_tui.run.script_args import split_script_args
from torchscan_tui.worker.steps import (
    ScriptProfiler,
    StepWindow,
    call_steps,
    hook_optimizer_steps,
)
from torchscan_tui.worker.workload_call import CompletedCall, join_lingering, threads_left_running

DEFAULT_CALLABLE = "workload"


class LoadError(Exception):
    """The script could not be loaded; the message names the file (and line)."""


def defines_top_level_name(source: str, name: str, filename: str) -> bool:
    """Whether ``name`` is bound at the top level of the module (def, class, =, import)."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise LoadError(f"{filename}:{exc.lineno}: syntax error: {exc.msg}") from exc
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names):
                return True
    return False


def load_workload(script: str, callable_name: str | None) -> tuple[Callable[[], Any], str]:
    """The callable to profile, and a description of it ("workload()" or "whole script")."""
    path = Path(script)
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LoadError(f"{script}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise LoadError(f"{script}: cannot be read ({exc})") from None
    name = callable_name or DEFAULT_CALLABLE
    if defines_top_level_name(source, name, script):
        spec = importlib.util.spec_from_file_location("__torchscan_workload__", path)
        if spec is None or spec.loader is None:
            raise LoadError(f"{script}: cannot be imported as a module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        target = getattr(module, name, None)
        if not callable(target):
            raise LoadError(f"{script}: {name} is not callable")
        return target, f"{name}()"
    if callable_name is not None:
        raise LoadError(f"{script}: defines no top-level {callable_name}")
    return (lambda: runpy.run_path(script, run_name="__main__")), "whole script as __main__"


def send_report(channel: ChannelWriter, report: Report, batch_size: int = ROW_BATCH) -> None:
    """The head first (so the UI knows M), then the rows in rank order, in batches."""
    channel.send(PhaseMessage("sending"))
    channel.send(HeadMessage.of(head_of(report)))
    rows = report["operators"]
    for start in range(0, len(rows), batch_size):
        channel.send(RowsMessage(rows[start : start + batch_size]))


def _exit_code_of(exc: BaseException) -> int | None:
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    if isinstance(exc, KeyboardInterrupt):
        return 130
    return None


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the workload called sys.exit({exc.code!r})"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1]}" if text else type(exc).__name__


DEFAULT_WARMUP = 1  # steps left out first: a first step pays one-off costs
DEFAULT_SCRIPT_STEPS = 5  # steps profiled in a training script
DEFAULT_CALL_STEPS = 1  # calls of workload() profiled


def step_window(
    args: argparse.Namespace,
    description: str,
    call: Callable[[], Any],
    on_step: Callable[[int, int], None],
) -> tuple[StepWindow, Callable[[], None], Callable[[], Any]]:
    """The window to profile, the undo of its hook, and what to call: ``workload()``
    once per step, or the whole script with every optimizer step counted."""
    warmup = DEFAULT_WARMUP if args.warmup is None else args.warmup
    if description.endswith("()"):
        steps = DEFAULT_CALL_STEPS if args.steps is None else args.steps
        window = StepWindow(warmup, steps, run_to_end=args.run_to_end, source=description,
                            on_step=on_step)  # fmt: skip
        return window, lambda: None, call_steps(call, window)
    steps = DEFAULT_SCRIPT_STEPS if args.steps is None else args.steps
    window = StepWindow(warmup, steps, run_to_end=args.run_to_end, on_step=on_step)
    return window, hook_optimizer_steps(window), call


def run(args: argparse.Namespace, channel: ChannelWriter) -> int:
    from torchscan_tui.worker.profiling import WorkloadError, profile_workload

    script = os.path.abspath(args.script)
    sys.argv = [script, *args.args]
    sys.path.insert(0, os.path.dirname(script))
    channel.send(PhaseMessage("loading"))
    adopter = ScriptProfiler()  # a script that profiles itself: its profile is ours
    adopter.install()  # before loading: the script may import torch.profiler.profile
    try:
        fn, description = load_workload(script, args.callable)
    except LoadError as exc:
        channel.send(ErrorMessage("load", str(exc)))
        return 2
    except BaseException as exc:  # noqa: BLE001 - the script's import-time failure
        channel.send(
            ErrorMessage(
                "load",
                f"{args.script}: failed while loading: {_one_line(exc)}",
                traceback.format_exc(),
                _exit_code_of(exc),
            )
        )
        return 2

    def progress(phase: WorkerPhase) -> None:
        channel.send(PhaseMessage(phase))

    call = CompletedCall(fn, description)

    def step_progress(done: int, of: int) -> None:
        channel.send(PhaseMessage("profiling", done, of))

    window, undo_hook, fn_to_profile = step_window(args, description, call, step_progress)
    window.on_reading = lambda: progress("collecting")  # a session, between two steps
    adopter.attach(window)

    def send_rows(report: Report) -> None:
        """The rows go out before the trace is written; the trace's path follows."""
        report["context"]["profiled"] = description
        report["diagnostics"] += call.notes
        send_report(channel, report)
        if args.trace:
            progress("tracing")

    threads_before = set(threading.enumerate())
    failure: BaseException | None = None
    try:
        report = profile_workload(
            fn_to_profile,
            device=args.device,
            trace_path=args.trace,
            row_limit=args.row_limit,
            on_progress=progress,
            on_rows=send_rows,
            window=window,
            with_flops=args.flops,
            call_sites=not args.no_stack,
        )
    except WorkloadError as exc:  # its rows went out all the same
        report, failure = exc.report, exc.original
    undo_hook()
    lingering = join_lingering(threads_before)
    if lingering:  # said now: the worker ends them with itself (see quick_exit)
        report["diagnostics"].append(threads_left_running(lingering))
    if args.trace or lingering:
        channel.send(HeadMessage.of(head_of(report)))
    if failure is not None:
        channel.send(
            ErrorMessage(
                "workload",
                _one_line(failure),
                "".join(traceback.format_exception(failure)),
                _exit_code_of(failure),
            )
        )
        return 1
    channel.send(DoneMessage())
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m torchscan_tui.worker")
    parser.add_argument("script")
    parser.add_argument("--callable", default=None)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    parser.add_argument("--row-limit", type=int, default=None)
    parser.add_argument("--trace", default=None)
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--run-to-end", action="store_true")
    parser.add_argument("--flops", action="store_true")
    parser.add_argument("--no-stack", action="store_true")
    ours, script_args = split_script_args(argv)
    args = parser.parse_args(ours)
    args.args = list(script_args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    channel = ChannelWriter(args.channel_fd)
    os.set_inheritable(args.channel_fd, False)  # the workload's own children must not hold it
    try:
        return run(args, channel)
    except BaseException as exc:  # noqa: BLE001 - report, never die silently
        try:
            channel.send(
                ErrorMessage(
                    "internal", f"profile worker failed: {_one_line(exc)}", traceback.format_exc()
                )
            )
        except OSError:
            pass
        return 3
