"""``torchscan-tui``: arguments to a headless run (``--json``) or to the app.

This module imports neither torch nor textual at import time: the headless path needs
neither in this process, and the app is imported only when it is launched. The headless
runner (:mod:`~torchscan_tui.cli.headless`: a workload's session, ``--compare``) is
imported only by the branches that use it: a report's or a trace's first painted row
waits for every import on its way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from torchscan_tui.cli.arguments import (
    build_parser,
    check_script,
    protect_dash_paths,
    torchrun_options,
)
from torchscan_tui.cli.open_progress import (
    ctrl_c_interrupts,
    open_ranks_with_progress,
    open_with_progress,
)
from torchscan_tui.cli.output import (
    EXIT_CANCELLED,
    EXIT_OK,
    fail,
    has_terminal,
    say,
)
from torchscan_tui.common.startup import started
from torchscan_tui.formats.opening import FIRST_PAGE_ROWS, Opened, opens_in_app, traces_in
from torchscan_tui.formats.report import (
    ReportError,
)
from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.script_args import split_script_args
from torchscan_tui.run.trace_source import TraceSource

if TYPE_CHECKING:
    from torchscan_tui.run.sources import RunSource


def pick_trace(folder: str) -> str | None:
    """One trace of a trace-handler directory: the user picks when there are several."""
    traces = traces_in(Path(folder))
    if len(traces) == 1 or not has_terminal():
        return str(traces[0])
    from torchscan_tui.ui.app import create_app

    chosen = create_app(traces=(Path(folder), traces), handle_hangup=True).run()
    return None if chosen is None else str(chosen)


def run_app(
    config: RunConfig | None,
    opened: Opened | None = None,
    source: RunSource | None = None,
) -> int:
    from torchscan_tui.ui.app import create_app

    app = create_app(
        config=config,
        source=source,
        report=opened.report if opened else None,
        report_path=opened.source if opened else "",
        pending_rows=opened.pending if opened else None,
        trace=opened.trace if opened else None,
        handle_hangup=True,
    )
    app.run()
    return app.return_code or 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command. The collector its entry point paused resumes after the app's first
    frame, before a headless run's or a conversion's work, and however the command ends
    (:mod:`~torchscan_tui.common.startup`)."""
    try:
        return _command(argv)
    finally:
        started()


def _command(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    ours, script_args = split_script_args(sys.argv[1:] if argv is None else argv)
    options = parser.parse_args(protect_dash_paths(ours))
    if options.compare is not None:
        from torchscan_tui.cli.headless import run_compare

        started()
        return run_compare(
            options.compare, options.json, options.force, options.fail_on_regression, options.by
        )
    if options.by != "shape":
        return fail("--by needs --compare BEFORE AFTER")
    if options.fail_on_regression is not None:
        return fail("--fail-on-regression needs --compare BEFORE AFTER")
    script = options.script
    if script is None:
        parser.print_usage(sys.stderr)
        return fail("give a workload script, a report or a trace to open")
    if options.row_limit is not None and options.row_limit < 1:
        return fail("--row-limit must be at least 1")
    if script.endswith((".json", ".json.gz")) or os.path.isdir(script):
        if options.json is not None:
            from torchscan_tui.cli.headless import convert_profile

            started()
            return convert_profile(script, options.json, options.force)
        shown = has_terminal()
        try:
            with ctrl_c_interrupts():  # not around the picker or the app: theirs is a key
                opened = open_ranks_with_progress(script) if os.path.isdir(script) else None
            if opened is None:  # else one trace per rank: one multi-rank session
                chosen = pick_trace(script) if os.path.isdir(script) else script
                if chosen is None:
                    return EXIT_OK
                if shown and opens_in_app(chosen):  # a big trace: its rows come in the app
                    return run_app(None, source=TraceSource(chosen))
                with ctrl_c_interrupts():
                    opened = open_with_progress(chosen, FIRST_PAGE_ROWS, keep_trace=shown)
            if not shown:  # piped, or a CI log: the top rows as text, not a screen
                with ctrl_c_interrupts():
                    # Here, not at the top: its summaries load ~5 ms the app never needs.
                    from torchscan_tui.formats.text_summary import report_text

                    say(report_text(opened.report, opened.source, opened.report["operators"]))
                return EXIT_OK
        except ReportError as exc:
            return fail(str(exc))
        except KeyboardInterrupt:
            return fail(f"{script}: opening interrupted (Ctrl-C)", EXIT_CANCELLED)
        return run_app(None, opened)
    problem = check_script(script)
    if problem:
        return fail(problem)
    if torchrun_options(options) and options.nproc_per_node is None:
        return fail("--nnodes, --node-rank and --rdzv-* run a torchrun job: they need "
                    "--nproc-per-node N")  # fmt: skip
    config = RunConfig(
        script=script,
        args=script_args,
        callable_name=options.callable_name,
        device=options.device,
        row_limit=options.row_limit,
        trace_path=os.path.abspath(options.trace) if options.trace else None,
        warmup=options.warmup,
        steps=options.steps,
        run_to_end=options.run_to_end,
        flops=options.flops,
        call_sites=not options.no_stack,
        rss_steps=options.rss_steps,
        nproc_per_node=options.nproc_per_node,
        torchrun_options=torchrun_options(options),
    )
    if options.json is not None:
        from torchscan_tui.cli.headless import run_headless

        started()
        return run_headless(config, options.json, options.force, options.timeout)
    if options.timeout is not None:
        return fail("--timeout applies to headless runs (--json OUT); press x to cancel in the app")
    if not has_terminal():
        return fail("the app needs a terminal (stdin and stdout); without one, pass --json OUT")
    return run_app(config)
