"""The command without the app: a headless run to ``--json``, converting a profile file,
and ``--compare`` (shown in the app when a person is there, else as text).

Imports neither torch nor textual: the headless path needs neither in this process.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import replace

from torchscan_tui.analysis.compare import compare_reports, gate, text_table, unusable_after
from torchscan_tui.analysis.device_summary import device_line
from torchscan_tui.analysis.diagnostics import DEVICE_UNAVAILABLE_CODES
from torchscan_tui.analysis.memory_timeline import device_peak_words, memory_lines
from torchscan_tui.analysis.records import Row
from torchscan_tui.analysis.step_summary import peak_scope, step_line, unprofiled_line
from torchscan_tui.cli.open_progress import ctrl_c_interrupts, open_with_progress
from torchscan_tui.cli.output import (
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_TIMEOUT,
    EXIT_WORKLOAD_FAILED,
    fail,
    has_terminal,
    say,
)
from torchscan_tui.cli.progress_line import RunProgress
from torchscan_tui.common.formatting import describe_row, format_bytes, format_seconds
from torchscan_tui.formats.atomic import (
    DestinationExists,
    ExportError,
    check_destination,
    write_text_atomically,
)
from torchscan_tui.formats.report import (
    ReportError,
    dumps_report,
    save_report,
)
from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.events import (
    Event,
    OutputLine,
    PhaseChanged,
    RowsReceived,
    RowsReplaced,
    RssSampled,
    RunFinished,
)
from torchscan_tui.run.phases import RUN_PHASES, phase_words
from torchscan_tui.run.session import Session

PRINTED_KEPT = 200  # the workload's lines remembered, to show a traceback once
PEAK_PASS_STOPS = (
    "the peak-RSS run follows (Ctrl-C or --timeout ends it there, the report still written)"
)


def rows_so_far(rows: Sequence[Row]) -> str:
    """``152 rows; top aten::conv2d [[8, 3, 32, 32], ...] 120.3 ms CPU self``."""
    if not rows:
        return "the profile is in, with no rows"
    top = max(rows, key=lambda row: row["cpu_self_seconds"])
    return (
        f"the profile is in: {len(rows):,} rows; top {describe_row(top)} "
        f"{format_seconds(top['cpu_self_seconds'])} CPU self"
    )


def run_headless(
    config: RunConfig, json_path: str, force: bool, timeout: float | None = None
) -> int:
    """Run the RSS child and the worker, then write the report; return the exit code."""
    try:
        check_destination(json_path, overwrite=force)
        if config.trace_path:
            check_destination(config.trace_path, overwrite=force)
    except DestinationExists as exc:
        return fail(f"{exc} (pass --force)")
    except ExportError as exc:
        return fail(str(exc))

    progress = RunProgress()
    rows: list[Row] = []
    printed: deque[str] = deque(maxlen=PRINTED_KEPT)  # the workload's last lines shown

    def show(event: Event) -> None:
        if isinstance(event, OutputLine):
            print(event.text, file=sys.stderr, flush=True)
            printed.append(event.text.strip())
            progress.workload_printed()
        elif isinstance(event, PhaseChanged) and event.phase in RUN_PHASES:
            if event.phase == "measuring":  # the profile is in: its rows, before the peak pass
                say(f"torchscan-tui: {rows_so_far(rows)}; {PEAK_PASS_STOPS}", err=True)
            what = phase_words(event.phase, config.rss_steps) or event.phase
            progress.phase(what, event.step, event.steps)
        elif isinstance(event, RssSampled):
            progress.rss(format_bytes(event.rss_bytes))
        elif isinstance(event, RowsReceived):
            rows.extend(event.rows)
        elif isinstance(event, RowsReplaced):
            rows[:] = event.rows

    session = Session(replace(config, private_trace=False), show)
    finished: list[RunFinished] = []
    runner = threading.Thread(target=lambda: finished.append(session.run()), daemon=True)

    def interrupted(signum: int, frame: object) -> None:
        """Ctrl-C during the peak pass ends it there (the rows are in: the report is
        written, its peak up to then); any other time, or again, cancels the run."""
        if signum != signal.SIGINT or not session.stop_peak_pass("you (Ctrl-C)"):
            session.cancel()

    previous = {
        signum: signal.signal(signum, interrupted)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    timed_out = threading.Event()

    def expire() -> None:
        """--timeout: during the peak pass it ends the pass (the rows are in), before it
        the run."""
        timed_out.set()
        if not session.stop_peak_pass("--timeout"):
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
        return fail(f"{config.script}: the run ended without a result (internal error)", 1)
    outcome = finished[0]
    if outcome.outcome == "cancelled":
        if timed_out.is_set():
            return fail(
                f"{config.script}: timed out after {timeout:g} s (--timeout); {outcome.message}",
                EXIT_TIMEOUT,
            )
        return fail(f"{config.script}: {outcome.message}", EXIT_CANCELLED)
    try:
        save_report(outcome.report, json_path, overwrite=force)
    except ExportError as exc:
        return fail(str(exc))
    if outcome.outcome == "failed":
        said = outcome.details.strip().splitlines()
        if said and said[-1].strip() not in printed:  # the worker's traceback: not shown yet
            say(outcome.details.rstrip("\n"), err=True)  # outside text: controls made visible
        return fail(outcome.message + f" (partial report in {json_path})", EXIT_WORKLOAD_FAILED)
    notes = {note["code"]: note["message"] for note in outcome.report["diagnostics"]}
    unavailable = [notes[code] for code in sorted(DEVICE_UNAVAILABLE_CODES) if code in notes]
    if unavailable and config.device != "auto":  # asked for by name: not profiled is a failure
        return fail(f"--device {config.device}: {unavailable[0]} (report in {json_path})", 1)
    if config.trace_path and not outcome.report.get("trace_path"):  # asked for, not written
        why = notes.get("trace_unavailable", f"no trace was written to {config.trace_path}")
        return fail(f"{why} (report in {json_path})", EXIT_WORKLOAD_FAILED)
    if not outcome.report["operators"]:  # an empty profile is no success (a CI must see it)
        why = notes.get("no_rows", "the profile holds no operator")
        return fail(
            f"{config.script}: no rows. {why} (report in {json_path})", EXIT_WORKLOAD_FAILED
        )
    for line in memory_lines(outcome.report.get("memory")):  # before the last line: a CI
        say(f"torchscan-tui: {line}", err=True)  # reads that one; controls made visible
    rss = (outcome.report.get("totals") or {}).get("process_peak_rss")
    peak = f"{rss['value'] / 2**20:.1f} MiB" if rss else "not measured"
    steps = step_line(outcome.report["context"])
    clean = unprofiled_line(outcome.report.get("run"), outcome.report["context"])
    say(
        f"torchscan-tui: {len(outcome.report['operators'])} rows, peak RSS "
        f"{peak}{peak_scope(outcome.report.get('run'))}"
        + (f", {steps}" if steps else "")
        + (f"; {clean}" if clean else "")
        + (f"; {device}" if (device := device_peak_words(outcome.report["context"])) else "")
        + f" -> {json_path}",
        err=True,
    )
    return EXIT_OK


def convert_profile(path: str, json_path: str, force: bool) -> int:
    """Headless conversion: a trace (or report) in, the report with all its rows out."""
    try:
        with ctrl_c_interrupts():
            check_destination(json_path, overwrite=force)
            report, source, *_ = open_with_progress(path)
            save_report(report, json_path, overwrite=force)
    except DestinationExists as exc:
        return fail(f"{exc} (pass --force)")
    except (ReportError, ExportError) as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return fail(f"{path}: conversion interrupted (Ctrl-C)", EXIT_CANCELLED)
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
    paths: Sequence[str],
    json_path: str | None,
    force: bool,
    percent: float | None,
    by: str = "shape",
) -> int:
    """Headless compare: the diff as JSON or text, and the regression gate's exit code.

    ``by`` matches rows by operator and shapes ("shape") or by operator ("operator")."""
    try:
        (before, before_name, *_), (after, after_name, *_) = map(open_with_progress, paths)
    except ReportError as exc:
        return fail(str(exc))
    for report, name in ((before, before_name), (after, after_name)):
        run = report.get("run") or {}
        if not run.get("complete", True):  # its rows undercount: the deltas will show it
            note = run.get("note") or f"{name} holds an incomplete run: its rows undercount"
            say(f"torchscan-tui: warning: {note}", err=True)
    diff = compare_reports(before, after, before_name, after_name, by)
    if percent is not None:
        offenders, within_noise = gate(diff, percent)
        offenders = unusable_after(after, after_name) + offenders
        diff["gate"] = {"percent": percent, "regressions": offenders, "within_noise": within_noise}
    if json_path is not None:
        try:
            write_text_atomically(json_path, dumps_report(diff), overwrite=force)
        except DestinationExists as exc:
            return fail(f"{exc} (pass --force)")
        except ExportError as exc:
            return fail(str(exc))
        say(f"torchscan-tui: {len(diff['rows'])} compared rows -> {json_path}", err=True)
    elif has_terminal():
        from torchscan_tui.ui.app import create_app

        def rediff(by: str) -> dict:  # the compare screen's o: the other matching
            return compare_reports(before, after, before_name, after_name, by)

        app = create_app(diff=diff, rediff=rediff, handle_hangup=True)
        app.run()
        if app.return_code:  # the app failed (its error is on the terminal)
            return app.return_code
    else:
        say(text_table(diff))
    if percent is not None:
        for moved in within_noise:
            say(f"torchscan-tui: within noise, not counted: {moved}", err=True)
        if offenders:
            say(f"torchscan-tui: regressions over {percent:g}%:", err=True)
            for offender in offenders:
                say(f"  {offender}", err=True)
            return EXIT_REGRESSION
        say(f"torchscan-tui: no regression over {percent:g}%", err=True)
    return EXIT_OK
