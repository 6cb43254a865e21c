"""A run of ``--nproc-per-node N`` ranks through ``torch.distributed.run`` (no torch here).

Both passes go through the real launcher (``python -m torch.distributed.run --standalone
--nproc-per-node N``), so rendezvous, environment and a dead rank's handling are
torchrun's own. The peak-RSS pass runs each rank under ``worker/rank_rss.py``, which
writes that rank's own ``ru_maxrss`` at exit; the profile pass runs each rank as a
profile worker (``worker/rank.py``) writing its channel. Each writes only into a file the
session made for it (``run/handoff.py``). Once the job has ended, :func:`read_ranks` has
one report per rank (from the channels as followed while the job ran, see
``rank_tail.py``), and the session combines them (``formats/ranks.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from torchscan_tui.analysis.diagnostics import make
from torchscan_tui.analysis.records import Note
from torchscan_tui.formats.report import new_report
from torchscan_tui.formats.report_schema import PeakRss, Report
from torchscan_tui.run.handoff import HandoffFile
from torchscan_tui.run.protocol import (
    DoneMessage,
    ErrorMessage,
    HeadMessage,
    InvalidMessage,
    RankMessage,
    Read,
    RowsMessage,
    apply_head,
)

TORCHRUN = ["-m", "torch.distributed.run"]
STANDALONE = ["--standalone"]  # one node: torchrun picks a free rendezvous port itself


def torchrun(python: str, nproc: int, launcher: Sequence[str] = ()) -> list[str]:
    """``python -m torch.distributed.run``: ``launcher`` holds the multi-node options
    (``--nnodes``, ``--node-rank``, ``--rdzv-*``) passed through; without them, one
    standalone node."""
    return [python, *TORCHRUN, *(launcher or STANDALONE), "--nproc-per-node", str(nproc)]


def rank_rss_command(
    python: str, nproc: int, script: str, args: Sequence[str], launcher: Sequence[str] = (),
    rss_steps: int | None = None,
) -> list[str]:  # fmt: skip
    limit = [f"--rss-steps={rss_steps}"] if rss_steps is not None else []
    return [*torchrun(python, nproc, launcher), "-m", "torchscan_tui.worker.rank_rss", *limit,
            script, *args]  # fmt: skip


class RankChannel:
    """One rank's report as its channel messages arrive: its global rank (its first
    message says it), and its last word (done, error or a message the worker did not
    send; None while the rank has not said it). ``closed`` once it has: a forged line
    fails the rank as it fails a plain run, and nothing after its last word counts."""

    def __init__(self, local_rank: int):
        self.local_rank = local_rank
        self.rank: int | None = None
        self.node = ""  # the session's name for the rank's node (its rank message says)
        self.host = ""
        self.report = new_report()
        self.terminal: DoneMessage | ErrorMessage | InvalidMessage | None = None

    @property
    def closed(self) -> bool:
        return self.terminal is not None

    def take(self, message: Read) -> None:
        if self.closed:
            return
        match message:
            case InvalidMessage():
                self.terminal = message
            case RankMessage(rank=rank, local_rank=local_rank):
                if self.rank is None and local_rank == self.local_rank:
                    self.rank = rank
                    self.node, self.host = message.node, message.host
                else:
                    self.terminal = InvalidMessage("a second rank message, or another rank's")
            case _ if self.rank is None:
                kind = type(message).__struct_config__.tag
                self.terminal = InvalidMessage(f"a {kind!r} message before the rank's own")
            case HeadMessage():
                apply_head(self.report, message.typed)
            case RowsMessage(rows=rows):
                self.report["operators"].extend(rows)
            case DoneMessage() | ErrorMessage():
                self.terminal = message


def read_ranks(
    channels: list[RankChannel], nproc: int, peaks: dict[int, HandoffFile]
) -> tuple[dict[int, tuple[str, Report]], list[str]]:
    """This node's ranks' reports (each with its own peak RSS, read from the file made for
    its local rank), and what went wrong on which rank; ``nproc``: the ranks this node
    started. Each channel was read through the session's own descriptor (``rank_tail``).
    """
    reports: dict[int, tuple[str, Report]] = {}
    problems: list[str] = []
    started = [channel for channel in channels if channel.rank is not None]
    if len(started) < nproc:
        missing = nproc - len(started)
        problems.append(f"{missing} of this node's {nproc} ranks never started a profile")
    for channel in started:
        rank, report, terminal = channel.rank, channel.report, channel.terminal
        match terminal:
            case None:
                problems.append(f"rank {rank}: ended without a complete result")
            case InvalidMessage(problem=problem):
                problems.append(
                    f"rank {rank}: the profile channel carried a message the worker did not "
                    f"send ({problem}): its rows are incomplete"
                )
            case ErrorMessage(message=said):
                problems.append(f"rank {rank}: {said}")
        peak = rank_peak(peaks.get(channel.local_rank))
        rss: PeakRss | None = (
            None if peak is None else
            {"value": peak, "unit": "bytes", "source": "the rank's own ru_maxrss at exit "
             "(in the peak pass, the process in its place on this node)"}
        )  # fmt: skip
        report["totals"] = {**(report.get("totals") or {}), "process_peak_rss": rss}
        assert rank is not None
        on = f" on {channel.host}" if channel.host else ""
        reports[rank] = (f"rank {rank} (local rank {channel.local_rank}{on})", report)
    return reports, problems


PEAK_BYTES = 64  # "PEAK STEP": two numbers


def spans_nodes(torchrun_options: Sequence[str]) -> bool:
    """Whether ``--nnodes`` asks for more than one node (``2``, ``1:4``)."""
    options = list(torchrun_options)
    if "--nnodes" not in options:
        return False
    value = options[options.index("--nnodes") + 1] if options[-1] != "--nnodes" else "1"
    return value.strip() not in ("1", "1:1")


def nodes_notes(
    torchrun_options: Sequence[str], local: Sequence[RankChannel], remote: Sequence[RankChannel]
) -> list[Note]:
    """What a session of a job across nodes holds: every node's ranks (rank 0's node, the
    others' ranks carried over the job's store), or only its own (another node: where
    the whole view is)."""
    if not spans_nodes(torchrun_options):
        return []
    mine = sorted(c.rank for c in local if c.rank is not None)
    theirs = sorted(c.rank for c in remote if c.rank is not None)
    if 0 in mine:
        return [make(
            "ranks_across_nodes",
            f"A job across nodes: this node's {_ranks(mine)} and the other nodes' "
            f"{_ranks(theirs) if theirs else 'ranks (none arrived)'}, whose rows and peak "
            "RSS (each measured on its own node) came over the job's own c10d store.",
        )]  # fmt: skip
    return [make(
        "ranks_on_this_node_only",
        f"A job across nodes: this session shows this node's {_ranks(mine)}; the "
        "session on the node of rank 0 shows every rank of every node.",
    )]  # fmt: skip


def _ranks(ranks: Sequence[int]) -> str:
    """``rank 1``, ``ranks 0, 1``, ``ranks (none)``."""
    return (
        f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks)) or '(none)'}"
    )


def peak_and_step(text: bytes) -> tuple[int | None, int | None]:
    """A peak-pass process's ``PEAK`` or ``PEAK STEP`` (the step it was ended at); None
    for what it did not write, or wrote as anything but numbers (the workload can reach
    that descriptor)."""
    words = text.split()
    if not 1 <= len(words) <= 2 or not all(word.isdigit() and len(word) < 20 for word in words):
        return None, None
    peak, step = int(words[0]), (int(words[1]) if len(words) == 2 else None)
    return peak, step


REMOTE_PEAKS_BYTES = 1 << 20  # "NODE LOCAL PEAK" lines: room for thousands of ranks


def remote_peaks(text: bytes) -> dict[tuple[str, int], int]:
    """The other nodes' ranks' peaks, as rank 0 wrote them (``NODE LOCAL PEAK`` lines),
    by (node, local rank); a line that is not three such words is skipped."""
    found: dict[tuple[str, int], int] = {}
    for line in text.decode("utf-8", "replace").splitlines():
        words = line.split()
        if len(words) == 3 and words[1].isdigit() and words[2].isdigit() and len(words[2]) < 20:
            found[(words[0], int(words[1]))] = int(words[2])
    return found


def rank_peak(handoff: HandoffFile | None) -> int | None:
    """A rank's peak RSS as its peak-pass process wrote it."""
    return None if handoff is None else peak_and_step(handoff.read_all(PEAK_BYTES))[0]


_ROOT_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_ROOT_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)(?:.*\((SIG\w+)\))?")
_ERROR_LINE = re.compile(r"^(?:\[rank\d+\]: )?(\w+(?:\.\w+)*(?:Error|Exception|Interrupt)): (.+)$")


# A rank killed by one of these did not fail because a peer did (a peer's loss ends the
# others with an exit status); torchrun's own teardown sends SIGTERM, never these first.
VIOLENT_SIGNALS = frozenset({"SIGKILL", "SIGSEGV", "SIGBUS", "SIGABRT", "SIGILL", "SIGFPE"})


def _failures(lines: Sequence[str]) -> list[tuple[int, int | None, str | None, bool]]:
    """Every ``rank : N`` / ``exitcode : X (SIG)`` pair of torchrun's failure report, once
    per rank: (rank, exit code, signal name, whether it is the root cause)."""
    found: dict[int, tuple[int, int | None, str | None, bool]] = {}
    rank, root = None, False
    for line in lines:
        if "Root Cause" in line:
            root = True
        elif (named := _ROOT_RANK.match(line)) is not None:
            rank = int(named.group(1))
        elif rank is not None and (ended := _ROOT_EXIT.match(line)) is not None:
            known = found.get(rank)
            found[rank] = (
                rank,
                int(ended.group(1)),
                ended.group(2),
                root or bool(known and known[3]),
            )
            rank = None
    return list(found.values())


def torchrun_failure(stderr_tail: Sequence[str], workload_lines: Sequence[str] = ()) -> str | None:
    """Which ranks failed and how, from torchrun's failure report (``rank : 1``,
    ``exitcode : -6 ... (SIGABRT)``), the cause first: a rank killed by a signal such as
    SIGKILL (the out-of-memory killer) before torchrun's "root cause" when that one only
    exited with a status (it lost its peer); with the last exception the ranks printed
    for the first not killed outright. Ranks torchrun ended itself (SIGTERM) are
    left out. None when torchrun said nothing of the kind."""
    failures = _failures(list(stderr_tail))
    if not failures:
        return None
    failures.sort(key=lambda f: (f[2] not in VIOLENT_SIGNALS, not f[3], f[0]))
    error = None
    for line in reversed(workload_lines):
        found = _ERROR_LINE.match(line.strip())
        if found and "ChildFailedError" not in line:
            error = f"{found.group(1)}: {found.group(2)}"
            break
    said = []
    for index, (rank, code, signal_name, _) in enumerate(failures):
        if index and signal_name == "SIGTERM":
            continue  # ended by torchrun once another had failed
        how = f"exit status {code}" if signal_name is None else f"signal {signal_name}"
        text = f"rank {rank} failed ({how})"
        if signal_name != "SIGKILL" and error:  # a process killed so says nothing
            text, error = f"{text}: {error}", None
        said.append(text)
    return "; ".join(said)
