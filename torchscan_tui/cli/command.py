"""``torchscan-tui``: arguments to a headless run (``--json``) or to the app.

This module imports neither torch nor textual at import time: the headless path needs
neither in this process, and the app is imported only when it is launched.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from torchscan_tui.analysis.compare import compare_reports, regressions, text_table, unusable_after
from torchscan_tui.analysis.device_summary import device_line
from torchscan_tui.analysis.diagnostics import DEVICE_UNAVAILABLE_CODES
from torchscan_tui.cli.progress_line import ProgressLine
from torchscan_tui.common.gcpause import freeze_long_lived, gc_paused
from torchscan_tui.common.text import neutralise_lines
from torchscan_tui.formats.atomic import (
    DestinationExists,
    ExportError,
    check_destination,
    write_text_atomically,
)
from torchscan_tui.formats.opening import open_profile_paged, traces_in
from torchscan_tui.formats.report import (
    FIRST_PAGE_ROWS,
    PendingRows,
    ReportError,
    dumps_report,
    save_report,
)
from torchscan_tui.formats.text_summary import report_text
from torchscan_tui.run.session import OutputLine, RunConfig, RunFinished, Session

EXIT_OK = 0
EXIT_WORKLOAD_FAILED = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 130
EXIT_TIMEOUT = 124
EXIT_REGRESSION = 3


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
    parser.epilog = (
        "Arguments after -- are passed to the script: torchscan-tui train.py -- --epochs 1"
    )
    return parser


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


def _seconds(text: str) -> float:
    """``--timeout``: a positive, finite number of seconds."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def split_script_args(argv: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """Our options before the first ``--``, the script's arguments after it."""
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], tuple(argv[cut + 1 :])
    return argv, ()


def _protect_dash_paths(argv: list[str]) -> list[str]:
    """A file named like an option (``-x.py``) is the script, not an option: ``./-x.py``."""
    return [
        os.path.join(".", arg) if arg.startswith("-") and os.path.isfile(arg) else arg
        for arg in argv
    ]


def say(text: str, *, err: bool = False) -> None:
    """Print outside text (names, paths, messages) with its controls made visible.

    A reader that goes away (``| head``) ends the output quietly, as ``cat`` does: the
    rest is sent to /dev/null, so neither this print nor the exit flush raises.
    """
    stream = sys.stderr if err else sys.stdout
    try:
        print(neutralise_lines(text), file=stream, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    say(f"torchscan-tui: {message}", err=True)
    return code


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


def _check_script(script: str) -> str | None:
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


def run_headless(
    config: RunConfig, json_path: str, force: bool, timeout: float | None = None
) -> int:
    """Run the RSS child and the worker, then write the report; return the exit code."""
    try:
        check_destination(json_path, overwrite=force)
        if config.trace_path:
            check_destination(config.trace_path, overwrite=force)
    except DestinationExists as exc:
        return _fail(f"{exc} (pass --force)")
    except ExportError as exc:
        return _fail(str(exc))

    def show(event) -> None:
        if isinstance(event, OutputLine):
            print(event.text, file=sys.stderr, flush=True)

    session = Session(replace(config, private_trace=False), show)
    finished: list[RunFinished] = []
    runner = threading.Thread(target=lambda: finished.append(session.run()), daemon=True)
    previous = {
        signum: signal.signal(signum, lambda *_: session.cancel())
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        session.cancel()

    timer = threading.Timer(timeout, expire) if timeout else None
    try:
        runner.start()
        if timer is not None:
            timer.daemon = True
            timer.start()
        while runner.is_alive():
            runner.join(0.2)
    finally:
        if timer is not None:
            timer.cancel()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        session.cleanup()
    if not finished:  # the run's thread died: a bug of ours, said in one line
        return _fail(f"{config.script}: the run ended without a result (internal error)", 1)
    outcome = finished[0]
    if outcome.outcome == "cancelled":
        if timed_out.is_set():
            return _fail(
                f"{config.script}: timed out after {timeout:g} s (--timeout); {outcome.message}",
                EXIT_TIMEOUT,
            )
        return _fail(f"{config.script}: {outcome.message}", EXIT_CANCELLED)
    try:
        save_report(outcome.report, json_path, overwrite=force)
    except ExportError as exc:
        return _fail(str(exc))
    if outcome.outcome == "failed":
        return _fail(outcome.message + f" (partial report in {json_path})", EXIT_WORKLOAD_FAILED)
    notes = {note["code"]: note["message"] for note in outcome.report["diagnostics"]}
    unavailable = [notes[code] for code in sorted(DEVICE_UNAVAILABLE_CODES) if code in notes]
    if unavailable and config.device != "auto":  # asked for by name: not profiled is a failure
        return _fail(f"--device {config.device}: {unavailable[0]} (report in {json_path})", 1)
    if config.trace_path and not outcome.report.get("trace_path"):  # asked for, not written
        why = notes.get("trace_unavailable", f"no trace was written to {config.trace_path}")
        return _fail(f"{why} (report in {json_path})", EXIT_WORKLOAD_FAILED)
    if not outcome.report["operators"]:  # an empty profile is no success (a CI must see it)
        why = notes.get("no_rows", "the profile holds no operator")
        return _fail(
            f"{config.script}: no rows. {why} (report in {json_path})", EXIT_WORKLOAD_FAILED
        )
    rss = outcome.report["totals"]["process_peak_rss"]
    say(
        f"torchscan-tui: {len(outcome.report['operators'])} rows, peak RSS "
        f"{rss['value'] / 2**20:.1f} MiB -> {json_path}",
        err=True,
    )
    return EXIT_OK


def convert_profile(path: str, json_path: str, force: bool) -> int:
    """Headless conversion: a trace (or report) in, the report with all its rows out."""
    try:
        check_destination(json_path, overwrite=force)
        report, source, _ = _open_with_progress(path)
        save_report(report, json_path, overwrite=force)
    except DestinationExists as exc:
        return _fail(f"{exc} (pass --force)")
    except (ReportError, ExportError) as exc:
        return _fail(str(exc))
    device = device_line(report["context"])
    say(
        f"torchscan-tui: {source}: {len(report['operators'])} rows, "
        f"{len(report.get('kernels') or [])} kernel groups"
        + (f", {device}" if device else "")
        + f" -> {json_path}",
        err=True,
    )
    return EXIT_OK


def run_compare(
    paths: Sequence[str], json_path: str | None, force: bool, percent: float | None
) -> int:
    """Headless compare: the diff as JSON or text, and the regression gate's exit code."""
    try:
        (before, before_name, _), (after, after_name, _) = (_open_with_progress(p) for p in paths)
    except ReportError as exc:
        return _fail(str(exc))
    for report, name in ((before, before_name), (after, after_name)):
        run = report.get("run") or {}
        if not run.get("complete", True):  # its rows undercount: the deltas will show it
            note = run.get("note") or f"{name} holds an incomplete run: its rows undercount"
            say(f"torchscan-tui: warning: {note}", err=True)
    diff = compare_reports(before, after, before_name, after_name)
    if json_path is not None:
        try:
            write_text_atomically(json_path, dumps_report(diff), overwrite=force)
        except DestinationExists as exc:
            return _fail(f"{exc} (pass --force)")
        except ExportError as exc:
            return _fail(str(exc))
        say(f"torchscan-tui: {len(diff['rows'])} compared rows -> {json_path}", err=True)
    elif has_terminal():
        from torchscan_tui.ui.compare_app import CompareApp

        CompareApp(diff).run()
    else:
        say(text_table(diff))
    if percent is not None:
        offenders = unusable_after(after, after_name) + regressions(diff, percent)
        if offenders:
            say(f"torchscan-tui: regressions over {percent:g}%:", err=True)
            for offender in offenders:
                say(f"  {offender}", err=True)
            return EXIT_REGRESSION
        say(f"torchscan-tui: no regression over {percent:g}%", err=True)
    return EXIT_OK


def has_terminal() -> bool:
    """Whether a person is there to see the app and type to it (stdin and stdout)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def pick_trace(folder: str) -> str | None:
    """One trace of a trace-handler directory: the user picks when there are several."""
    traces = traces_in(Path(folder))
    if len(traces) == 1 or not has_terminal():
        return str(traces[0])
    from torchscan_tui.ui.trace_picker import TracePicker

    chosen = TracePicker(Path(folder), traces).run()
    return None if chosen is None else str(chosen)


def _open_with_progress(path: str, first_page: int | None = None) -> tuple[dict, str, PendingRows]:
    """open_profile_paged, showing its progress on the terminal while it works.

    The profile's hundreds of thousands of objects live as long as the app, so they are
    frozen out of the cyclic collector (``gc.freeze``) before it resumes: otherwise its
    next passes, the first one at once, would walk all of them again and again (0.2 s
    each at 100k rows, and later as pauses in the UI).
    """
    with ProgressLine(os.path.basename(os.path.normpath(path))) as progress, gc_paused():
        opened = open_profile_paged(path, progress, first_page)
        freeze_long_lived()
        return opened


def run_app(
    config: RunConfig | None,
    report: dict | None,
    report_path: str = "",
    pending: PendingRows | None = None,
) -> int:
    from torchscan_tui.ui.app import create_app

    app = create_app(
        config=config,
        report=report,
        report_path=report_path,
        pending_rows=pending,
        handle_hangup=True,
    )
    app.run()
    return app.return_code or 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ours, script_args = split_script_args(sys.argv[1:] if argv is None else argv)
    options = parser.parse_args(_protect_dash_paths(ours))
    if options.compare is not None:
        return run_compare(options.compare, options.json, options.force, options.fail_on_regression)
    if options.fail_on_regression is not None:
        return _fail("--fail-on-regression needs --compare BEFORE AFTER")
    script = options.script
    if script is None:
        parser.print_usage(sys.stderr)
        return _fail("give a workload script, a report or a trace to open")
    if options.row_limit is not None and options.row_limit < 1:
        return _fail("--row-limit must be at least 1")
    if script.endswith((".json", ".json.gz")) or os.path.isdir(script):
        if options.json is not None:
            return convert_profile(script, options.json, options.force)
        try:
            chosen = pick_trace(script) if os.path.isdir(script) else script
            if chosen is None:
                return EXIT_OK
            report, source, pending = _open_with_progress(chosen, FIRST_PAGE_ROWS)
        except ReportError as exc:
            return _fail(str(exc))
        if not has_terminal():  # piped, or a CI log: the top rows as text, not a screen
            say(report_text(report, source, report["operators"]))
            return EXIT_OK
        return run_app(None, report, source, pending)
    problem = _check_script(script)
    if problem:
        return _fail(problem)
    config = RunConfig(
        script=script,
        args=script_args,
        callable_name=options.callable_name,
        device=options.device,
        row_limit=options.row_limit,
        trace_path=os.path.abspath(options.trace) if options.trace else None,
    )
    if options.json is not None:
        return run_headless(config, options.json, options.force, options.timeout)
    if options.timeout is not None:
        return _fail(
            "--timeout applies to headless runs (--json OUT); press x to cancel in the app"
        )
    if not has_terminal():
        return _fail("the app needs a terminal (stdin and stdout); without one, pass --json OUT")
    return run_app(config, None)
