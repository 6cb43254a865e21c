"""A directory of rank traces (one per rank, as HTA lays them out) opened as one session.

Each trace's rank is first read from its head (``distributedInfo.rank``) or its name (a
``rank-N`` / ``rank_N`` / ``rankN``), without parsing it: a directory whose traces do not
give one rank each (a ``tensorboard_trace_handler`` folder of one rank's runs, say) is not
a multi-rank session, :func:`open_rank_directory` gives None at once and the caller lets
the user pick one trace, as before. Otherwise each trace is opened in a process pool (a
64-rank directory need not take 64 times one rank's time on a machine with the cores) and
its parsed ``distributedInfo`` confirms the rank.

The session's report has the cross-rank rows as its ``operators`` (the median rank's
figures, the widest spread first: see :mod:`torchscan_tui.analysis.ranks`) and keeps every
rank's own rows and summary in its ``ranks`` block.
"""

from __future__ import annotations

import gzip
import os
import re
import statistics
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.analysis.ranking import self_time_sums
from torchscan_tui.analysis.ranks import (
    collective_evidence,
    cross_rank_kernels,
    cross_rank_rows,
    evidence_line,
    rank_summary,
    straggler,
    straggler_line,
)
from torchscan_tui.analysis.records import RankSummary
from torchscan_tui.common.forked import cores
from torchscan_tui.formats.opening import open_profile, traces_in
from torchscan_tui.formats.report import ReportError, new_report
from torchscan_tui.formats.report_schema import RANK_TRACES_SOURCE, Context, Report, RunStatus

RankReports = Mapping[int, tuple[str | os.PathLike, Report]]
"""Each rank's report and where it came from (a trace file, or a rank of this session)."""

# Notes every rank's trace carries alike, said once for the session instead.
RANK_NOTES_LEFT_OUT = frozenset({"no_shapes_recorded", "no_device_events_in_trace"})
RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
RANK_IN_HEAD = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+)')
HEAD_BYTES = 256 * 1024  # the keys before traceEvents: device properties can take a few KiB

RankDone = Callable[[int, int], None]
"""``on_rank(done, of)``: progress as each rank's trace is read."""


def _open_one(path: str, fork: bool) -> Report:
    """One rank's trace as a report (in a pool process); ``fork``: its summaries made
    beside its grouping, as a trace opened alone has them (cores to spare)."""
    report, _ = open_profile(path, fork=fork)
    return report


def readers_fork(readers: int) -> bool:
    """Whether each of ``readers`` rank readers running at once makes its trace's
    summaries in a child beside its grouping: where each has a second core; on fewer,
    the children would take the other readers' cores."""
    return 2 * readers <= cores()


def rank_hint(path: Path) -> int | None:
    """A trace's rank from its first bytes (``distributedInfo`` is written before the
    events) or its name, without decoding it: a folder of one rank's runs is told from a
    folder of ranks before any trace is parsed. None when neither says."""
    head = b""
    if path.is_file():  # a FIFO or device named *.json is never read (it could block)
        opener = gzip.open if path.name.endswith(".gz") else open
        try:
            with opener(path, "rb") as trace:
                head = trace.read(HEAD_BYTES)
        except (OSError, EOFError, zlib.error):
            head = b""
    found = RANK_IN_HEAD.search(head)
    if found:
        return int(found.group(1))
    named = RANK_IN_NAME.search(path.name)
    return int(named.group(1)) if named else None


def rank_of(report: Report, path: Path) -> int | None:
    info = (report.get("context") or {}).get("distributed") or {}
    if type(info.get("rank")) is int:
        return info["rank"]
    found = RANK_IN_NAME.search(path.name)
    return int(found.group(1)) if found else None


def open_rank_directory(
    folder: str | os.PathLike,
    on_rank: RankDone = lambda done, of: None,
    workers: int | None = None,
) -> tuple[Report, str] | None:
    """The directory as one multi-rank session, or None when it is not one trace per rank."""
    traces = traces_in(Path(folder))
    if len(traces) < 2:
        return None
    hints = [rank_hint(path) for path in traces]
    if None in hints or len(set(hints)) < len(hints):
        return None  # not one trace per rank: nothing is parsed for the picker's case
    # Here, not at the top: multiprocessing is ~20 ms of every start of the command.
    from concurrent.futures import ProcessPoolExecutor, as_completed

    workers = workers or min(len(traces), os.cpu_count() or 1)
    reports: dict[Path, Report] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        fork = readers_fork(min(workers, len(traces)))
        futures = {pool.submit(_open_one, str(path), fork): path for path in traces}
        for done, future in enumerate(as_completed(futures), 1):
            try:
                reports[futures[future]] = future.result()
            except ReportError:
                return None  # not a trace of ours to pair: the picker names the file
            on_rank(done, len(traces))
    by_rank: dict[int, tuple[str | os.PathLike, Report]] = {}
    for path, report in reports.items():
        rank = rank_of(report, path)
        if rank is None or rank in by_rank:
            return None
        by_rank[rank] = (path, report)
    check_one_job(folder, by_rank)
    return multi_rank_report(by_rank), os.fspath(folder)


def check_one_job(folder: str | os.PathLike, by_rank: RankReports) -> None:
    """ReportError when the traces are ranks of more than one job: their world sizes
    differ, or a rank is past its world (a log folder reused by a job of another size)."""
    sizes = {
        rank: ((report.get("context") or {}).get("distributed") or {}).get("world_size")
        for rank, (_, report) in by_rank.items()
    }
    known = {size for size in sizes.values() if size is not None}
    if len(known) > 1 or any(size is not None and rank >= size for rank, size in sizes.items()):
        of_size = {size: [str(r) for r in sorted(sizes) if sizes[r] == size] for size in known}
        jobs = "; ".join(
            f"world size {size}: rank {', '.join(ranks)}" for size, ranks in sorted(of_size.items())
        )
        raise ReportError(
            f"{os.fspath(folder)} holds ranks of more than one job ({jobs}): move each job's "
            "traces to a folder of their own and open that"
        )


def _cross_rank_words(ranks: int) -> str:
    """What the cross-rank rows are, for ``ranks`` ranks (one: a node's share of a job
    across nodes, or a folder holding one rank's trace)."""
    if ranks == 1:
        return (
            "1 rank in this session: its rows, the most CPU self time first (no other rank "
            "to differ from). Its own rows are in the report's ranks block."
        )
    return (
        f"{ranks} ranks in one session: each row shows the median rank's figures and, in "
        "its detail, every rank's CPU self time; rows are sorted by how much the ranks "
        "differ (max - min), then by CPU self time. Each rank's own rows are in the "
        "report's ranks block."
    )


def multi_rank_report(by_rank: RankReports) -> Report:
    """One report for every rank: cross-rank rows and kernels, each rank's rows, kernels
    and summary (host and device sides), the straggler verdict."""
    ranks = sorted(by_rank)
    per_rank_rows = {rank: by_rank[rank][1]["operators"] for rank in ranks}
    per_rank_kernels = {rank: by_rank[rank][1].get("kernels") or [] for rank in ranks}
    rows = cross_rank_rows(per_rank_rows)
    summaries = []
    for rank in ranks:
        path, report = by_rank[rank]
        summary = rank_summary(rank, report)
        rss = (report.get("totals") or {}).get("process_peak_rss")
        steps = ((report.get("context") or {}).get("steps") or {}).get("step_seconds") or [
            step["seconds"] for step in (report.get("overview") or {}).get("steps") or []
        ]  # a trace's steps are its overview's
        summary["source"] = str(path)
        summary["peak_rss"] = rss["value"] if rss else None
        summary["step_seconds_median"] = statistics.median(steps) if steps else None
        summaries.append(summary)
    first = by_rank[ranks[0]][1]
    info = (first.get("context") or {}).get("distributed") or {}
    verdict = straggler(summaries, rows)
    evidence = collective_evidence(summaries)
    notes = [diag.make("cross_rank_rows", _cross_rank_words(len(ranks)))]
    cut = [r for r in ranks if not (by_rank[r][1].get("run") or {}).get("complete", True)]
    for rank in ranks:  # each rank's own notes (a trace cut short, say), named by rank
        notes += [
            {"code": note["code"], "message": f"rank {rank}: {note['message']}"}
            for note in by_rank[rank][1].get("diagnostics") or []
            if note["code"] not in RANK_NOTES_LEFT_OUT
        ]
    world = info.get("world_size")
    if isinstance(world, int) and len(ranks) < world:
        missing = sorted(set(range(world)) - set(ranks))
        said = ", ".join(map(str, missing))
        notes.append(
            diag.make("ranks_missing", f"{len(ranks)} of the job's {world} ranks are here: "
                      f"rank {said} missing.")
        )  # fmt: skip
    run: RunStatus = {"complete": not cut}
    if cut:
        run["note"] = "; ".join(
            f"rank {rank}: {(by_rank[rank][1].get('run') or {}).get('note') or 'incomplete'}"
            for rank in cut
        )
    context: Context = {
        "device": (first.get("context") or {}).get("device", "cpu"),
        "row_limit": None,
        "total_grouped_operators": len(rows),
        "ranked_by": "rank_spread",
        "source": RANK_TRACES_SOURCE,
        "ranks": len(ranks),
        "world_size": info.get("world_size") or len(ranks),
        "backend": info.get("backend"),
        "straggler": straggler_line(verdict),
        "straggler_evidence": evidence_line(evidence),
        **self_time_sums(rows),
    }
    per_rank: list[RankSummary] = [
        {
            **summary,
            "operators": per_rank_rows[summary["rank"]],
            "kernels": per_rank_kernels[summary["rank"]],
        }
        for summary in summaries
    ]
    return new_report(
        operators=rows,
        context=context,
        kernels=cross_rank_kernels(per_rank_kernels),
        diagnostics=notes,
        workload={"script": None},
        run=run,
        ranks={
            "world_size": info.get("world_size") or len(ranks),
            "straggler": verdict,
            "collective_evidence": evidence,
            "per_rank": per_rank,
        },
    )
