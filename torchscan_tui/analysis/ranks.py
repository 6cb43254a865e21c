"""Many ranks as one session: the cross-rank rows, each rank's summary, the straggler.

Each rank's report is read as one profile is (its rows, in its own units); here they meet.
A cross-rank row is one (operator, shapes, kind) with its CPU self time on every rank (a
rank where it did not run took no time in it: zero there, a true figure), and the
table's figures are the median rank's. The spread (max - min) ranks them: the rows where
the ranks differ most come first. Collectives (``nccl:*``, ``gloo:*``, ``c10d::*``,
``record_param_comms``) are counted apart from compute: a fast rank waits in them for a
slow one, so the straggler is the rank with the most compute, and the line that names
it also names the operator where its compute exceeds the median's most.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from torchscan_tui.analysis.records import Row
from torchscan_tui.common.formatting import describe_row, format_seconds

COLLECTIVE_PREFIXES = ("nccl:", "gloo:", "c10d::", "record_param_comms", "ProcessGroup")
CROSS_RANK = "ranks"  # a cross-rank row's per-rank figures


def is_collective(operator: str) -> bool:
    return operator.startswith(COLLECTIVE_PREFIXES)


def _key(row: Mapping) -> tuple:
    return row["operator"], repr(row["input_shapes"]), row.get("kind", "operator")


def rank_summary(rank: int, rows: list[Row]) -> dict:
    """One rank: its total CPU self time, split into collectives and compute."""
    total = sum(row["cpu_self_seconds"] for row in rows)
    collective = sum(row["cpu_self_seconds"] for row in rows if is_collective(row["operator"]))
    return {
        "rank": rank,
        "rows": len(rows),
        "cpu_self_seconds": total,
        "collective_seconds": collective,
        "compute_seconds": total - collective,
    }


def cross_rank_rows(per_rank: Mapping[int, list[Row]]) -> list[Row]:
    """One row per (operator, shapes, kind) over every rank, the widest spread first."""
    ranks = sorted(per_rank)
    by_key: dict[tuple, dict[int, Row]] = {}
    for rank in ranks:
        for row in per_rank[rank]:
            by_key.setdefault(_key(row), {})[rank] = row
    rows: list[Row] = []
    for found in by_key.values():
        seconds = {rank: found[rank]["cpu_self_seconds"] if rank in found else 0.0
                   for rank in ranks}  # fmt: skip
        device = [found[r]["device_self_seconds"] for r in found
                  if found[r].get("device_self_seconds") is not None]  # fmt: skip
        sample = next(iter(found.values()))
        slowest = max(ranks, key=lambda rank: seconds[rank])
        values = list(seconds.values())
        row: Row = {
            "operator": sample["operator"],
            "input_shapes": sample["input_shapes"],
            "kind": sample.get("kind", "operator"),
            "calls": round(
                statistics.median(found[r]["calls"] if r in found else 0 for r in ranks)
            ),  # fmt: skip
            "cpu_self_seconds": statistics.median(values),
            "device_self_seconds": statistics.median(device) if device else None,
            "cpu_net_bytes": round(
                statistics.median(found[r]["cpu_net_bytes"] if r in found else 0 for r in ranks)
            ),  # fmt: skip
            "callers": dict(sample.get("callers") or {}),
            "diagnostics": [],
        }
        row[CROSS_RANK] = {  # type: ignore[typeddict-unknown-key]
            "min": min(values),
            "median": statistics.median(values),
            "max": max(values),
            "spread": max(values) - min(values),
            "slowest_rank": slowest,
            "seconds": {str(rank): value for rank, value in seconds.items()},
        }
        rows.append(row)
    rows.sort(key=lambda row: (-row[CROSS_RANK]["spread"], row["operator"]))  # type: ignore[typeddict-item]
    return rows


def straggler_line(summaries: list[dict], rows: list[Row]) -> str | None:
    """``rank 1 is 245% slower than the median, in aten::mm [[64, 64], [64, 64]]``: the
    rank with the most compute, how far above the median rank's, and the operator where
    its time exceeds that row's median most. None with fewer than two ranks."""
    if len(summaries) < 2:
        return None
    median = statistics.median(summary["compute_seconds"] for summary in summaries)
    slowest = max(summaries, key=lambda summary: summary["compute_seconds"])
    if median <= 0 or slowest["compute_seconds"] <= median:
        return None
    rank = str(slowest["rank"])
    compute = [row for row in rows if not is_collective(row["operator"])]
    worst = max(
        compute,
        key=lambda row: row[CROSS_RANK]["seconds"][rank] - row[CROSS_RANK]["median"],  # type: ignore[typeddict-item]
        default=None,
    )
    line = (
        f"rank {rank} is {(slowest['compute_seconds'] / median - 1) * 100:.0f}% slower than "
        f"the median rank ({format_seconds(slowest['compute_seconds'])} of compute against "
        f"{format_seconds(median)})"
    )
    return line + (f", in {describe_row(worst)}" if worst is not None else "")
