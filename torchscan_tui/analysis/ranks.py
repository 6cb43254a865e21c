"""Many ranks as one session: the cross-rank rows and kernels, each rank's summary, the
straggler.

Each rank's report is read as one profile is (its rows, in its own units); here they meet.
A cross-rank row is one (operator, shapes, kind) with its CPU self time on every rank (a
rank where it did not run took no time in it: zero there, a true figure), and the
table's figures are the median rank's. The spread (max - min) ranks them: the rows where
the ranks differ most come first. The cross-rank kernel view is the same for the kernel
view's rows.

Each rank's summary has two sides, named as such wherever they are shown:

* **host**: the CPU self time of its ops, split into collectives (``nccl:*``,
  ``gloo:*``, ``c10d::*``, ``record_param_comms``) and the rest (host compute);
* **device**: HTA's temporal breakdown of its device timeline (idle, compute,
  non-compute, communication/computation overlap: :mod:`.device_timeline`).

The straggler is the rank with the most compute per step (device kernels' time per step
where the ranks ran device work, else host CPU work per step, from each rank's step
overview), named only when it exceeds the other ranks' median by more than a threshold
and more than the ranks' own step-to-step spread; the line says both. On device traces, HTA's
evidence is added: when each rank's main collective kernel starts within its steps.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any, cast

from torchscan_tui.analysis.fields import ROW_FIELDS, across_ranks
from torchscan_tui.analysis.records import (
    CollectiveEvidence,
    CrossRank,
    KernelRow,
    RankFigures,
    Row,
    Straggler,
)
from torchscan_tui.common.formatting import describe_row, format_seconds

COLLECTIVE_PREFIXES = ("nccl:", "gloo:", "c10d::", "record_param_comms", "ProcessGroup")
STRAGGLER_THRESHOLD = 0.10  # a rank must be more than this much slower than the median


def is_collective(operator: str) -> bool:
    return operator.startswith(COLLECTIVE_PREFIXES)


def _key(row: Mapping) -> tuple:
    return row["operator"], repr(row["input_shapes"]), row.get("kind", "operator")


def rank_summary(rank: int, report: Mapping) -> RankFigures:
    """One rank: its host-side CPU self time split into collectives and compute, its
    device timeline (HTA's breakdown, None without device work) and its compute in each
    step (from its step overview: device kernels, or host CPU work without a device)."""
    rows = report.get("operators") or []
    total = sum(row["cpu_self_seconds"] for row in rows)
    collective = sum(row["cpu_self_seconds"] for row in rows if is_collective(row["operator"]))
    overview = report.get("overview") or {}
    device = overview.get("device_timeline")
    measure = "kernel" if device else "cpu"
    per_step = [step[measure] for step in overview.get("steps") or []]
    return {
        "rank": rank,
        "rows": len(rows),
        "host_cpu_self_seconds": total,
        "host_collective_seconds": collective,
        "host_compute_seconds": total - collective,
        "compute_per_step": per_step,
        "compute_measure": "device kernels" if device else "host CPU work",
        "device_timeline": device,
        "collective_starts": overview.get("collective_starts") or {},
    }


def _per_rank_figures(
    found: Mapping[int, Mapping[str, Any]], ranks: Sequence[int], field: str
) -> CrossRank:
    """One figure on every rank (0 where the rank has no such row), its median, spread and
    slowest rank."""
    seconds: dict[int, float] = {
        rank: found[rank][field] if rank in found else 0.0 for rank in ranks
    }
    values = list(seconds.values())
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
        "spread": max(values) - min(values),
        "slowest_rank": max(ranks, key=lambda rank: seconds[rank]),
        "seconds": {str(rank): value for rank, value in seconds.items()},
    }


def _median_of(found: Mapping[int, Mapping], ranks: Sequence[int], field: str) -> int:
    return round(statistics.median(found[r][field] if r in found else 0 for r in ranks))


def cross_rank_rows(per_rank: Mapping[int, list[Row]]) -> list[Row]:
    """One row per (operator, shapes, kind) over every rank, the widest spread first,
    then the largest median CPU self time.

    Every field a rank's row has is kept: a figure of the field table
    (:data:`~torchscan_tui.analysis.fields.ROW_FIELDS`) as its ``across_ranks`` says (the
    median over the ranks, mostly), any other as the first rank has it. A field added to
    rows reaches this view without a word here."""
    ranks = sorted(per_rank)
    by_key: dict[tuple, dict[int, Row]] = {}
    for rank in ranks:
        for row in per_rank[rank]:
            by_key.setdefault(_key(row), {})[rank] = row
    rows: list[Row] = []
    for found in by_key.values():
        sample = next(iter(found.values()))
        merged: dict[str, Any] = {
            **sample,
            "kind": sample.get("kind", "operator"),
            "callers": dict(sample.get("callers") or {}),
            "diagnostics": [],
            "ranks": _per_rank_figures(found, ranks, "cpu_self_seconds"),
        }
        for field in ROW_FIELDS:
            if field.across_ranks != "first":
                merged[field.key] = across_ranks(field, found, ranks)
        merged.pop("rank", None)  # a live rank's tag: the row is every rank's now
        merged.pop("cpu_self_seconds_per_step", None)  # one rank's steps, not the median's
        rows.append(cast(Row, merged))
    # Among equal spreads (every row's where one rank is here, or ranks that ran alike),
    # the most CPU self time first, as a rank's own rows: by name, a node's one rank
    # of a job across nodes showed its rows in alphabetical order.
    rows.sort(key=lambda row: (-row["ranks"]["spread"], -row["ranks"]["median"],
                               row["operator"]))  # fmt: skip
    return rows


def cross_rank_kernels(per_rank: Mapping[int, Sequence[KernelRow]]) -> list[KernelRow]:
    """The kernel view over every rank: per (kernel, launching operator), the median
    rank's calls and total time, the fastest and slowest single run on any rank, and each
    rank's total; the largest median total first."""
    ranks = sorted(per_rank)
    by_key: dict[tuple[str, str], dict[int, KernelRow]] = {}
    for rank in ranks:
        for kernel in per_rank[rank]:
            by_key.setdefault((kernel["kernel"], kernel["operator"]), {})[rank] = kernel
    merged: list[KernelRow] = []
    for found in by_key.values():
        figures = _per_rank_figures(found, ranks, "total_seconds")
        calls = _median_of(found, ranks, "calls")
        sample = next(iter(found.values()))
        merged.append({
            **sample,
            "calls": calls,
            "total_seconds": figures["median"],
            "mean_seconds": figures["median"] / calls if calls else 0.0,
            "min_seconds": min(k["min_seconds"] for k in found.values()),
            "max_seconds": max(k["max_seconds"] for k in found.values()),
            "ranks": figures,
        })  # fmt: skip
    merged.sort(key=lambda kernel: (-kernel["total_seconds"], kernel["kernel"]))
    return merged


def _typical_compute(summary: Mapping) -> float | None:
    """A rank's compute in its median step: a step the machine took away (a pause, a
    descheduled step) moves a mean, not this."""
    per_step = summary.get("compute_per_step") or []
    return statistics.median(per_step) if per_step else None


def _step_spread(summary: Mapping) -> float | None:
    """A rank's own step-to-step variation of its compute: its interquartile range over
    its median. Robust to a step or two the machine took away (a pause, a descheduled
    step): with (max - min) one such step on a fast rank hid a 4x straggler."""
    per_step = summary.get("compute_per_step") or []
    if len(per_step) < 2 or statistics.median(per_step) <= 0:
        return None
    low, _, high = statistics.quantiles(per_step, n=4, method="inclusive")
    return (high - low) / statistics.median(per_step)


def straggler(summaries: Sequence[Mapping[str, Any]], rows: Sequence[Row]) -> Straggler | None:
    """The straggler verdict: who, by how much, against which bar, and where; None with
    fewer than two ranks or no compute to compare (module docstring for the rule)."""
    if len(summaries) < 2:
        return None
    per_step = {summary["rank"]: _typical_compute(summary) for summary in summaries}
    compute: dict[int, float] = {rank: v for rank, v in per_step.items() if v is not None}
    if len(compute) < len(per_step):  # no step figures: the host compute of the whole run
        compute = {summary["rank"]: summary["host_compute_seconds"] for summary in summaries}
        measure, per = "host compute", ""
    else:
        measure, per = f"{summaries[0]['compute_measure']} per step", " a step"
    slowest = max(compute, key=lambda rank: compute[rank])
    # Against the others: with two ranks a median over all would be their mean, half
    # made of the straggler itself.
    median = statistics.median(v for rank, v in compute.items() if rank != slowest)
    if median <= 0:
        return None
    gap = compute[slowest] / median - 1
    spreads = [spread for spread in map(_step_spread, summaries) if spread is not None]
    noise = statistics.median(spreads) if spreads else None
    bar = max(STRAGGLER_THRESHOLD, noise or 0.0)
    verdict: Straggler = {
        "rank": slowest if gap > bar else None,
        "slowest_rank": slowest,
        "gap": gap,
        "threshold": STRAGGLER_THRESHOLD,
        "step_spread": noise,
        "measure": measure,
        "slowest_seconds": compute[slowest],
        "median_seconds": median,
        "per": per,
        "operator": None,
    }
    if verdict["rank"] is not None:
        rank = str(slowest)
        worst = max(
            (row for row in rows if not is_collective(row["operator"]) and "ranks" in row),
            key=lambda row: row["ranks"]["seconds"][rank] - row["ranks"]["median"],
            default=None,
        )
        verdict["operator"] = describe_row(worst) if worst is not None else None
    return verdict


def straggler_line(verdict: Mapping | None) -> str | None:
    """The verdict in one line: ``rank 1 is 245% slower than the other ranks' median in
    host CPU work per step (...), beyond the 10% threshold and the ranks' 8% step-to-step
    spread; most in aten::mm [[64, 64], [64, 64]]``, or ``no straggler: ...``."""
    if verdict is None:
        return None
    figures = (
        f"{format_seconds(verdict['slowest_seconds'])}{verdict['per']} against "
        f"{format_seconds(verdict['median_seconds'])}"
    )
    spread = verdict["step_spread"]
    bar = f"the {verdict['threshold']:.0%} threshold" + (
        f" and the ranks' {spread:.0%} step-to-step spread" if spread is not None else ""
    )
    if verdict["rank"] is None:
        return (
            f"no straggler: the slowest rank (rank {verdict['slowest_rank']}) is "
            f"{verdict['gap']:.0%} above the other ranks' median in {verdict['measure']} "
            f"({figures}), within {bar}"
        )
    line = (
        f"rank {verdict['rank']} is {verdict['gap']:.0%} slower than the other ranks' "
        f"median in {verdict['measure']} ({figures}), beyond {bar}"
    )
    return line + (f"; most in {verdict['operator']}" if verdict["operator"] else "")


def collective_evidence(summaries: Sequence[Mapping]) -> CollectiveEvidence | None:
    """HTA's straggler evidence: the main collective kernel (the one whose length varies
    most across ranks, HTA's choice) and when it starts within each rank's steps, as a
    share of the step; the rank where it starts latest arrived last. None without long
    collective kernels on every rank."""
    names = set.intersection(*(set(s.get("collective_starts") or {}) for s in summaries))
    if len(summaries) < 2 or not names:
        return None

    def variation(name: str) -> float:
        per_step = zip(*(s["collective_starts"][name]["durations"] for s in summaries),
                       strict=False)  # fmt: skip
        spreads = [statistics.pstdev(v) for v in per_step if None not in v]
        return statistics.fmean(spreads) if spreads else -1.0

    main = max(sorted(names), key=variation)
    starts = {}
    for summary in summaries:
        known = [s for s in summary["collective_starts"][main]["starts"] if s is not None]
        if known:
            starts[str(summary["rank"])] = statistics.fmean(known)
    if len(starts) < 2:
        return None
    latest = max(starts, key=lambda rank: starts[rank])
    return {"kernel": main, "starts": starts, "latest_rank": int(latest)}


def evidence_line(evidence: Mapping | None) -> str | None:
    if not evidence:
        return None
    starts = evidence["starts"]
    median = statistics.median(starts.values())
    latest = str(evidence["latest_rank"])
    return (
        f"rank {latest}'s main collective kernel ({evidence['kernel']}) starts latest in "
        f"its steps: at {starts[latest]:.0%} of the step, the median rank's at {median:.0%} "
        "(HTA's straggler evidence)"
    )


def straggler_lines(context: Mapping) -> list[str]:
    """A multi-rank report's verdict and evidence lines, labelled, as text and the ranks
    dialog show them."""
    return [
        f"{label}: {context[key]}"
        for key, label in (("straggler", "straggler"), ("straggler_evidence", "evidence"))
        if context.get(key)
    ]
