"""A run of ``--nproc-per-node N`` ranks through ``torch.distributed.run`` (no torch here).

Both passes go through the real launcher (``python -m torch.distributed.run --standalone
--nproc-per-node N``), so rendezvous, environment and a dead rank's handling are
torchrun's own. The peak-RSS pass runs each rank under ``worker/rank_rss.py``, which
writes that rank's own ``ru_maxrss`` at exit; the profile pass runs each rank as a
profile worker (``worker/rank.py``) writing its channel to a file of its own. Once the
job has ended, :func:`read_ranks` has one report per rank (from the files as followed
while the job ran, see ``rank_tail.py``, or read then), and the
session combines them (``formats/ranks.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from torchscan_tui.formats.report import new_report
from torchscan_tui.run.protocol import apply_meta, read_messages
from torchscan_tui.run.rank_files import CHANNEL_NAME, rss_name

TORCHRUN = ["-m", "torch.distributed.run"]
STANDALONE = ["--standalone"]  # one node: torchrun picks a free rendezvous port itself


def torchrun(python: str, nproc: int, launcher: Sequence[str] = ()) -> list[str]:
    """``python -m torch.distributed.run``: ``launcher`` holds the multi-node options
    (``--nnodes``, ``--node-rank``, ``--rdzv-*``) passed through; without them, one
    standalone node."""
    return [python, *TORCHRUN, *(launcher or STANDALONE), "--nproc-per-node", str(nproc)]


def rank_rss_command(
    python: str, nproc: int, folder: str, script: str, args: Sequence[str],
    launcher: Sequence[str] = (),
) -> list[str]:  # fmt: skip
    return [*torchrun(python, nproc, launcher), "-m", "torchscan_tui.worker.rank_rss", folder,
            script, *args]  # fmt: skip


class RankChannel:
    """One rank's report as its channel messages arrive, and its last word (done, error
    or a forged message; None while the rank has not said it)."""

    def __init__(self) -> None:
        self.report = new_report()
        self.terminal: dict | None = None

    def take(self, message: dict) -> None:
        kind = message["type"]
        if kind == "meta":
            apply_meta(self.report, message)
        elif kind == "rows":
            self.report["operators"].extend(message["rows"])
        elif kind in ("done", "error", "invalid"):
            self.terminal = message


def read_rank_channel(path: Path) -> RankChannel:
    """One rank's channel file, read whole."""
    channel = RankChannel()
    fd = os.open(path, os.O_RDONLY)
    try:
        for message in read_messages(fd):
            channel.take(message)
    finally:
        os.close(fd)
    return channel


def rank_channels(folder: str | Path) -> dict[int, tuple[Path, int]]:
    """The rank channel files in ``folder``: global rank -> (file, local rank). Global
    ranks on the second node of a job start at ``--nproc-per-node``, not 0."""
    found = {}
    for name in os.listdir(folder):
        match = CHANNEL_NAME.match(name)
        if match:
            found[int(match.group(1))] = (Path(folder) / name, int(match.group(2)))
    return dict(sorted(found.items()))


def read_ranks(
    folder: str, nproc: int, already_read: dict[int, RankChannel] | None = None
) -> tuple[dict[int, tuple[Path, dict]], list[str]]:
    """This node's ranks' reports (each with its own peak RSS), and what went wrong on
    which rank; ``nproc``: the ranks this node started. ``already_read``: ranks whose
    files were followed to their end while the job ran (see ``rank_tail``), not read
    again."""
    already_read = already_read or {}
    reports: dict[int, tuple[Path, dict]] = {}
    problems: list[str] = []
    channels = rank_channels(folder)
    if len(channels) < nproc:
        missing = nproc - len(channels)
        problems.append(f"{missing} of this node's {nproc} ranks never started a profile")
    for rank, (channel, local_rank) in channels.items():
        read = already_read.get(rank) or read_rank_channel(channel)
        report, terminal = read.report, read.terminal
        if terminal is None:
            problems.append(f"rank {rank}: ended without a complete result")
        elif terminal["type"] != "done":
            problems.append(f"rank {rank}: {terminal.get('message') or terminal.get('problem')}")
        peak = rank_peak(folder, local_rank)
        report["totals"]["process_peak_rss"] = (
            None if peak is None else
            {"value": peak, "unit": "bytes", "source": "the rank's own ru_maxrss at exit "
             "(in the peak pass, the process in its place on this node)"}
        )  # fmt: skip
        reports[rank] = (channel, report)
    return reports, problems


def rank_peak(folder: str, local_rank: int) -> int | None:
    try:
        return int((Path(folder) / rss_name(local_rank)).read_text())
    except (OSError, ValueError):
        return None


_ROOT_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_ROOT_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)(?:.*\((SIG\w+)\))?")
_ERROR_LINE = re.compile(r"^(?:\[rank\d+\]: )?(\w+(?:\.\w+)*(?:Error|Exception|Interrupt)): (.+)$")


def torchrun_failure(stderr_tail: Sequence[str], workload_lines: Sequence[str] = ()) -> str | None:
    """Which rank failed and how, from torchrun's "Root Cause" block (``rank : 1``,
    ``exitcode : -6 ... (SIGABRT)``), with the last exception the ranks printed; None
    when torchrun said nothing of the kind."""
    rank = exit_code = signal_name = None
    lines = list(stderr_tail)
    roots = [i for i, line in enumerate(lines) if "Root Cause" in line]
    for line in lines[roots[-1] :] if roots else lines:  # the first failure, not its echoes
        if rank is None and (found := _ROOT_RANK.match(line)):
            rank = int(found.group(1))
        elif rank is not None and exit_code is None and (found := _ROOT_EXIT.match(line)):
            exit_code, signal_name = int(found.group(1)), found.group(2)
    if rank is None:
        return None
    how = f"exit status {exit_code}" if signal_name is None else f"signal {signal_name}"
    error = None
    for line in reversed(workload_lines):
        found = _ERROR_LINE.match(line.strip())
        if found and "ChildFailedError" not in line:
            error = f"{found.group(1)}: {found.group(2)}"
            break
    return f"rank {rank} failed ({how})" + (f": {error}" if error else "")
