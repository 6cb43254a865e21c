"""Compare two runs (reports or traces) row by row, and gate on regressions (pure).

Rows are matched on (operator, input shapes, kind), or with ``by="operator"`` on
(operator, kind) alone, each side's shapes merged first: a model whose shapes changed
(another batch size, sequence length or width) still compares operator by operator. Each
compare row holds the before and after figures, the delta and ratio of CPU and device
self time and of calls, and whether the row exists on one side only. Missing figures
stay None: a row absent before has no ratio, and device time absent on either side has
no device delta.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from torchscan_tui.analysis.records import CompareRow, Delta, Presence
from torchscan_tui.analysis.step_summary import PER_STEP
from torchscan_tui.common.formatting import (
    describe_row,
    format_bytes,
    format_ratio,
    format_seconds,
    format_signed_seconds,
    shapes_text,
)

FLAT_COLUMNS = (
    "operator", "input_shapes", "kind", "presence",
    "cpu_before", "cpu_after", "cpu_delta", "cpu_ratio",
    "device_before", "device_after", "device_delta", "device_ratio",
    "calls_before", "calls_after",
)  # fmt: skip
COMPARE_SORTS = {
    "delta": lambda row: row["cpu_self_seconds"]["delta"],
    "ratio": lambda row: row["cpu_self_seconds"]["ratio"],
    "device": lambda row: row["device_self_seconds"]["delta"],
    "calls": lambda row: row["calls"]["delta"],
}
TOP_ROWS_GATED = 10
# How a row found on one side only is marked, in the text table and the compare screen.
PRESENCE_MARKS = {"both": "", "only_before": "gone", "only_after": "new"}

COMPARE_SCHEMA = "torchscan-tui/compare"  # what ``--compare ... --json`` writes
# What rows are matched on: "shape" (operator, input shapes, kind) or "operator" (shapes merged).
COMPARE_BY = ("shape", "operator")
MERGED_SHAPES = "merged_shapes"  # how many distinct input shapes a merged row stands for


MISSING = "—"


def side_seconds(row: Mapping[str, Any], field: str, side: str) -> str:
    """A side's figure as shown: ``—`` where the row does not exist on that side (its
    zero counts in the delta, but no such row was measured there)."""
    if row["presence"] == f"only_{'after' if side == 'before' else 'before'}":
        return MISSING
    return format_seconds(row[field][side])


def _key(row: Mapping[str, Any]) -> tuple:
    return (row["operator"], str(row["input_shapes"]), row.get("kind", "operator"))


def _delta(before: float | None, after: float | None) -> tuple[float | None, float | None]:
    if before is None or after is None:
        return None, None
    ratio = after / before if before else None
    return after - before, ratio


def _sum_or_none(values: list) -> float | int | None:
    """The sum, or None when any row lacks the figure (a part-measured total is no total)."""
    return None if any(value is None for value in values) else sum(values)


def merge_by_operator(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (operator, kind): calls and self times summed over its shapes, in order
    of first appearance. ``input_shapes`` is [] and ``merged_shapes`` says how many
    distinct shapes were merged; per-step spreads do not survive a merge (they were per
    shape), so a gate on merged rows compares totals."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["operator"], row.get("kind", "operator")), []).append(row)
    merged = []
    for (operator, kind), members in groups.items():
        merged.append(
            {
                "operator": operator,
                "input_shapes": [],
                "kind": kind,
                MERGED_SHAPES: len({str(row["input_shapes"]) for row in members}),
                **{
                    name: _sum_or_none([row.get(name) for row in members])
                    for name in ("calls", "cpu_self_seconds", "device_self_seconds")
                },
            }
        )
    return merged


def _figure(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, name: str) -> Delta:
    """One figure before and after; a row missing on a side counts as 0 calls and 0 s
    there (it did not run), but has no ratio, and no device time (not measured)."""
    a = old.get(name) if old else None
    b = new.get(name) if new else None
    if old is None and name != "device_self_seconds":
        a = 0 if name == "calls" else 0.0
    if new is None and name != "device_self_seconds":
        b = 0 if name == "calls" else 0.0
    delta, ratio = _delta(a, b)
    if old is None or new is None:  # a row on one side: its zero has no ratio
        ratio = None
    return {"before": a, "after": b, "delta": delta, "ratio": ratio}


def compare_rows(
    before_rows: Iterable[Mapping[str, Any]],
    after_rows: Iterable[Mapping[str, Any]],
    by: str = "shape",
) -> list[CompareRow]:
    """One row per (operator, shapes, kind), or per (operator, kind) with ``by="operator"``,
    the largest CPU self-time change first, faster or slower (a -50 ms row matters more
    than a +38 us one)."""
    if by not in COMPARE_BY:
        raise ValueError(f"compare by {by!r}: expected one of {', '.join(COMPARE_BY)}")
    if by == "operator":
        before_rows, after_rows = merge_by_operator(before_rows), merge_by_operator(after_rows)
    before = {_key(row): row for row in before_rows}
    after = {_key(row): row for row in after_rows}
    rows: list[CompareRow] = []
    for key in list(before) + [k for k in after if k not in before]:
        old, new = before.get(key), after.get(key)
        sample = new or old
        assert sample is not None
        presence: Presence = "both" if old and new else ("only_before" if old else "only_after")
        row: CompareRow = {
            "operator": sample["operator"],
            "input_shapes": sample["input_shapes"],
            "kind": sample.get("kind", "operator"),
            "presence": presence,
            "cpu_self_seconds": _figure(old, new, "cpu_self_seconds"),
            "device_self_seconds": _figure(old, new, "device_self_seconds"),
            "calls": _figure(old, new, "calls"),
            "cpu_self_seconds_per_step": {
                "before": old.get(PER_STEP) if old else None,
                "after": new.get(PER_STEP) if new else None,
            },
        }
        if by == "operator":
            row["merged_shapes"] = {side: (r or {}).get(MERGED_SHAPES) for side, r in
                                    (("before", old), ("after", new))}  # fmt: skip
        rows.append(row)
    rows.sort(key=lambda row: -abs(row["cpu_self_seconds"]["delta"] or 0.0))
    return rows


def _total(rows: Sequence[Mapping[str, Any]], side: str, field: str) -> float | None:
    """Sum over the rows that exist on ``side``; None if that side lacks the figure."""
    values = [row[field][side] for row in rows if row["presence"] in ("both", f"only_{side}")]
    if not values or any(value is None for value in values):
        return None
    return sum(values)


def _peak_rss(report: Mapping[str, Any]) -> float | None:
    """The whole-process peak RSS in bytes, None where the run has none (a trace)."""
    rss = (report.get("totals") or {}).get("process_peak_rss")
    return rss.get("value") if isinstance(rss, dict) else None


def _unprofiled_step(report: Mapping[str, Any]) -> float | None:
    """The median step time of the run's unprofiled peak pass (the script's own speed,
    without the profiler), None where it counted no steps (a trace, a script without
    an optimizer)."""
    steps = (report.get("run") or {}).get("unprofiled_steps")
    median = steps.get("median_seconds") if isinstance(steps, Mapping) else None
    return median if isinstance(median, (int, float)) and median > 0 else None


def compare_reports(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    before_name: str,
    after_name: str,
    by: str = "shape",
) -> dict[str, Any]:
    """The whole compare: rows (see :func:`compare_rows`), totals, peak RSS, ranks."""
    rows = compare_rows(before.get("operators") or [], after.get("operators") or [], by)
    totals = {}
    for field in ("cpu_self_seconds", "device_self_seconds"):
        a = _total(rows, "before", field)
        b = _total(rows, "after", field)
        delta, ratio = _delta(a, b)
        totals[field] = {"before": a, "after": b, "delta": delta, "ratio": ratio}
    a, b = _peak_rss(before), _peak_rss(after)
    delta, ratio = _delta(a, b)
    totals["process_peak_rss"] = {"before": a, "after": b, "delta": delta, "ratio": ratio}
    a, b = _unprofiled_step(before), _unprofiled_step(after)
    delta, ratio = _delta(a, b)
    totals["unprofiled_step_seconds"] = {"before": a, "after": b, "delta": delta, "ratio": ratio}
    diff = {
        "schema": COMPARE_SCHEMA,
        "schema_version": 1,
        "before": before_name,
        "after": after_name,
        "by": by,
        "rows": rows,
        "totals": totals,
        "note": "Sums of self time compare like with like; they are not latency.",
    }
    by_rank = compare_ranks(before, after)
    if by_rank:
        diff["ranks"] = by_rank
    return diff


RANK_FIGURES = ("host_compute_seconds", "host_collective_seconds", "host_cpu_self_seconds")


def compare_ranks(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict]:
    """Two multi-rank sessions rank by rank (the ranks both have): each rank's host
    compute, collective and total CPU self time, before and after; [] unless both have
    ranks."""
    sides = [
        {summary["rank"]: summary for summary in (report.get("ranks") or {}).get("per_rank") or []}
        for report in (before, after)
    ]
    compared = []
    for rank in sorted(set(sides[0]) & set(sides[1])):
        entry: dict = {"rank": rank}
        for name in RANK_FIGURES:
            a, b = sides[0][rank].get(name), sides[1][rank].get(name)
            delta, ratio = _delta(a, b)
            entry[name] = {"before": a, "after": b, "delta": delta, "ratio": ratio}
        compared.append(entry)
    return compared


def _largest(rows: list[dict], field: str) -> list[dict]:
    def size(row: dict) -> float:
        return -max(row[field]["before"] or 0.0, row[field]["after"] or 0.0)

    return sorted(rows, key=size)[:TOP_ROWS_GATED]


def _gated_rows(rows: list[dict]) -> list[dict]:
    """The top-10 rows by CPU self time, and by device self time where a side has it."""
    gated = _largest(rows, "cpu_self_seconds")
    chosen = set(map(id, gated))
    for row in _largest(rows, "device_self_seconds"):
        if row["device_self_seconds"]["delta"] is not None and id(row) not in chosen:
            gated.append(row)
    return gated


def unusable_after(after: Mapping[str, Any], name: str) -> list[str]:
    """Why the after side cannot pass a gate, however its rows compare: a run with no
    rows, cut short, or without self times passes nothing (a gate must not go green on a
    run that failed to measure)."""
    rows = after.get("operators") or []
    if not rows:
        return [f"{name} has no rows: nothing was measured"]
    problems = []
    run = after.get("run") or {}
    if run.get("complete") is False:
        problems.append(f"{name} is incomplete: {run.get('note') or 'its rows undercount'}")
    if not any(row.get("cpu_self_seconds") for row in rows):
        problems.append(f"{name} has no CPU self time on any row: nothing was timed")
    return problems


def regressions(diff: dict, percent: float) -> list[str]:
    """Why the gate fails (see :func:`gate`)."""
    return gate(diff, percent)[0]


def step_noise(row: dict) -> tuple[float, float, float] | None:
    """A compare row's CPU self time per step, both sides: (median before, median after,
    noise), the noise being the wider of the two runs' min-max spreads; None unless both
    sides were profiled step by step."""
    spreads = row.get(PER_STEP) or {}
    before, after = spreads.get("before"), spreads.get("after")
    if not before or not after:
        return None
    noise = max(before["max"] - before["min"], after["max"] - after["min"])
    return before["median"], after["median"], noise


def gate(diff: dict, percent: float) -> tuple[list[str], list[str]]:
    """The regression gate: (why it fails, what moved but within noise).

    Fails on total self time (CPU, and device where both sides measured it) or one of
    the largest rows slower by more than ``percent``. Where both runs timed their steps
    unprofiled (the peak pass), that step time replaces the total CPU self time: the
    spec's latency is measured without the profiler. Where both sides have per-step
    figures, a row's CPU time regresses only when its median per step moves beyond the
    threshold *and* beyond the spread of both runs' steps; one that passes the threshold
    but not the spread is listed as within noise, not failed."""
    limit = 1 + percent / 100
    offenders, within_noise = [], []
    clean = diff["totals"].get("unprofiled_step_seconds") or {}
    if clean.get("ratio") is not None:  # both sides ran unprofiled: their speed is the gate's
        if clean["ratio"] > limit:
            offenders.append(
                f"unprofiled step median {format_seconds(clean['before'])} -> "
                f"{format_seconds(clean['after'])} (+{(clean['ratio'] - 1) * 100:.1f}%)"
            )
    for field, label in (("cpu_self_seconds", "CPU"), ("device_self_seconds", "device")):
        total = diff["totals"][field]
        replaced = field == "cpu_self_seconds" and clean.get("ratio") is not None
        if replaced and total["ratio"] is not None and total["ratio"] > limit:
            within_noise.append(
                f"total CPU self time +{(total['ratio'] - 1) * 100:.1f}% (profiled; the "
                "unprofiled step time is the gate's)"
            )
            continue
        if not replaced and total["ratio"] is not None and total["ratio"] > limit:
            offenders.append(
                f"total {label} self time {format_seconds(total['before'])} -> "
                f"{format_seconds(total['after'])} (+{(total['ratio'] - 1) * 100:.1f}%)"
            )
    for row in _gated_rows(diff["rows"]):
        for field, label in (("cpu_self_seconds", "CPU"), ("device_self_seconds", "device")):
            figure = row[field]
            before_value, after_value = figure["before"], figure["after"]
            if before_value is None or after_value is None:
                continue
            noisy = step_noise(row) if field == "cpu_self_seconds" else None
            if before_value == 0 and after_value > 0 and row["presence"] == "only_after":
                offenders.append(f"{describe_row(row)}: new, {label} {format_seconds(after_value)}")
            elif noisy is not None:
                median_before, median_after, noise = noisy
                if median_before <= 0 or median_after <= median_before * limit:
                    continue
                moved = (
                    f"{describe_row(row)}: {label} median per step "
                    f"{format_seconds(median_before)} -> {format_seconds(median_after)} "
                    f"(+{(median_after / median_before - 1) * 100:.1f}%; step spread "
                    f"{format_seconds(noise)})"
                )
                if median_after - median_before > noise:
                    offenders.append(moved)
                else:
                    within_noise.append(moved)
            elif figure["ratio"] is not None and figure["ratio"] > limit:
                offenders.append(
                    f"{describe_row(row)}: {label} {format_seconds(before_value)} -> "
                    f"{format_seconds(after_value)} (+{(figure['ratio'] - 1) * 100:.1f}%)"
                )
    return offenders, within_noise


def _total_line(label: str, total: dict) -> str:
    change = format_signed_seconds(total["delta"])
    if total["delta"] is not None and total["before"]:
        change += f", {total['delta'] / total['before']:+.1%}"
    return (
        f"total {label} self time {format_seconds(total['before'])} -> "
        f"{format_seconds(total['after'])} ({change})"
    )


def text_table(diff: dict, limit: int = 20) -> str:
    """The largest CPU self-time deltas as plain text, for a terminal or a CI log.

    Deltas are signed (``+`` is slower); rows on one side only are marked gone or new.
    """
    lines = [f"{diff['before']} -> {diff['after']}"]
    if diff.get("by") == "operator":
        lines.append("by operator: each side's input shapes merged")
    for field, label in (("cpu_self_seconds", "CPU"), ("device_self_seconds", "device")):
        total = diff["totals"][field]
        if field == "cpu_self_seconds" or total["before"] is not None or total["after"] is not None:
            lines.append(_total_line(label, total))
    clean = diff["totals"].get("unprofiled_step_seconds") or {}
    if clean.get("before") is not None or clean.get("after") is not None:
        change = "" if clean.get("ratio") is None else f" ({format_ratio(clean['ratio'])})"
        lines.append(
            f"unprofiled step median {format_seconds(clean.get('before'))} -> "
            f"{format_seconds(clean.get('after'))}{change} (the script without the profiler)"
        )
    rss = diff["totals"].get("process_peak_rss") or {}
    if rss.get("before") is not None or rss.get("after") is not None:
        lines.append(
            f"peak RSS {format_bytes(rss['before'])} -> {format_bytes(rss['after'])}"
            " (whole process, the kernel's high-water mark)"
        )
    for entry in diff.get("ranks") or []:  # two multi-rank sessions: rank by rank
        compute, collective = entry["host_compute_seconds"], entry["host_collective_seconds"]
        lines.append(
            f"rank {entry['rank']}: host compute {format_seconds(compute['before'])} -> "
            f"{format_seconds(compute['after'])} ({format_ratio(compute['ratio'])}), "
            f"host collectives {format_seconds(collective['before'])} -> "
            f"{format_seconds(collective['after'])} (CPU self time)"
        )
    lines.append(
        f"{'delta':>12} {'before':>12} {'after':>12} {'ratio':>8}  {'':<5} operator and shapes"
    )
    for row in diff["rows"][:limit]:
        figure = row["cpu_self_seconds"]
        lines.append(
            f"{format_signed_seconds(figure['delta']):>12} "
            f"{side_seconds(row, 'cpu_self_seconds', 'before'):>12} "
            f"{side_seconds(row, 'cpu_self_seconds', 'after'):>12} "
            f"{format_ratio(figure['ratio']):>8}  {PRESENCE_MARKS[row['presence']]:<5} "
            f"{describe_row(row)}"
        )
    return "\n".join(lines)


def flat_row(row: dict) -> dict:
    """A compare row as one level of fields, for CSV / Markdown / JSON export."""
    flat = {key: row[key] for key in ("operator", "input_shapes", "kind", "presence")}
    if MERGED_SHAPES in row:  # an operator-only compare: the shapes column says so
        flat["input_shapes"] = shapes_text(row)
    for field, prefix in (
        ("cpu_self_seconds", "cpu"),
        ("device_self_seconds", "device"),
        ("calls", "calls"),
    ):
        for part in ("before", "after", "delta", "ratio"):
            flat[f"{prefix}_{part}"] = row[field][part]
    return flat
