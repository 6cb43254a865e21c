"""A window recorded in profiler sessions of a step or more, each read and let go (issue 31).

torch holds every event of a profile until the profile is gone: at its stop it builds
its results for all of them, and reading them doubles that. A window of three op-dense
steps (1.19M events) took the worker to 4.96 GB, 4.60 GB of it torch's own. So at a step
end, once the session has recorded enough (``window_memory.SESSION_BYTES``: small steps
share one), the session is stopped, what the report needs of it is taken (its events as
grouping reads them, its allocations, its trace as a file aside), and it is let go before
the next step starts a fresh one: torch then holds one session's events at a time
(benchmarks/window_memory.py: 1.90 GB at the same size). A session's events wait for the
others marshalled (~60 bytes an event, not the ~650 their objects held among the gaps
torch's freed ones left), and become events again once every session is read.

The script waits at the step end while a session is read (seconds, for hundreds of
thousands of events; a thread of its own runs on, unprofiled): each session after the
first begins with a ``STEP_START`` marker, from which its step is timed
(analysis/step_model.py), and the merged trace shows the gap.
"""

from __future__ import annotations

import gc
import marshal
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from torchscan_tui.common.memory import return_free_memory
from torchscan_tui.formats.atomic import write_atomically
from torchscan_tui.run.private_dir import PrivateDir

if TYPE_CHECKING:
    from torchscan_tui.analysis.memory_timeline import Allocation
    from torchscan_tui.analysis.profiler_events import RawEvent
    from torchscan_tui.worker.trace_export import Mended

# Every time there is: a session's allocations are cut to the window later.
ALL_TIME = (0, 2**63 - 1)
EVENTS_PER_WRITE = 20_000  # trace events copied into the merged file at a time
EVENTS_PER_CHUNK = 50_000  # events marshalled at once (their plain tuples made per chunk)
PIECES_PREFIX = ".torchscan-steps-"  # a window's trace pieces, hidden beside its trace
# Each session's correlation ids are moved by its number times this, so that a runtime
# call or kernel of one session never links to another's, whether or not the device's
# ids repeat across sessions; within a session every link is kept.
SESSION_ID_STRIDE = 1 << 48


def one_process_job() -> bool:
    """Whether the window may be read in sessions: not in a job of several ranks
    (``WORLD_SIZE``, as torchrun sets it, or a process group of several the script has
    made, as ``mp.spawn`` jobs do). Each rank decides from its own recording when to read
    a session, and a rank reading one (seconds) would hold the others in their next
    step's first collective: that wait would count as their communication time and name
    a straggler that is ours. Reading together would need a collective of ours in the
    job's own group at every step end. Ranks keep one session for the window."""
    try:
        if int(os.environ.get("WORLD_SIZE") or 1) > 1:
            return False
    except ValueError:
        pass
    distributed = sys.modules.get("torch.distributed")  # imported by the script, if at all
    try:
        return not (
            distributed is not None
            and distributed.is_available()
            and distributed.is_initialized()
            and distributed.get_world_size() > 1
        )
    except (RuntimeError, ValueError):  # a group torch cannot say the size of
        return False


def let_go(profile: Any) -> None:
    """A stopped session's results freed now, their pages handed back. A dropped
    ``torch.profiler.profile`` holds itself in a cycle (its actions are its own bound
    methods), so its results waited for a full collection: the next session's stop found
    them still held (1.1 GB at 396k events), and a collection each time took 0.5-0.7 s.
    They hang off its ``profiler``, which is in no cycle: dropped, they go at once."""
    if hasattr(profile, "profiler"):
        profile.profiler = None
    else:  # a torch that keeps them elsewhere
        gc.collect()
    return_free_memory()


class SessionHarvest:
    """What each finished session of a window left, gathered as the window goes.

    ``extract`` reads a session's events (``extract_raw_events``); ``trace_path``: where
    the window's trace goes at the end (None: no trace wanted, none is written aside).
    """

    def __init__(
        self,
        extract: Callable[[Any], list[RawEvent]],
        trace_path: str | os.PathLike | None,
        export: Callable[[Any, Path, Callable[[], list[RawEvent]]], Mended | None],
    ):
        self._extract = extract
        # Writes a session's trace to a path, given its events on demand (for our own
        # writer, where torch's file is no JSON); says how torch's file was mended.
        self._export = export
        self._trace_path = Path(trace_path) if trace_path is not None else None
        self._events: list[list[bytes]] = []  # each session's, marshalled in chunks
        self.allocations: list[Allocation] | None = []
        self.pieces: list[Path] = []
        self.mended: set[Mended] = set()  # how pieces' traces were made JSON (trace_export.py)
        self.trace_failure: Exception | None = None
        self.sessions = 0
        self._directory: PrivateDir | None = None

    def take(self, profile: Any) -> None:
        """A stopped session's events, allocations and trace; the caller lets it go."""
        self.sessions += 1
        events = self._extract(profile.profiler.kineto_results)
        offset = (self.sessions - 1) * SESSION_ID_STRIDE
        chunks = [
            marshal.dumps(_plain(events[first : first + EVENTS_PER_CHUNK], offset))
            for first in range(0, len(events), EVENTS_PER_CHUNK)
        ]
        self._events.append(chunks)
        del events  # before torch's event tree is walked, then its trace written
        self._take_allocations(profile)
        if self._trace_path is not None and self.trace_failure is None:
            try:
                self.write_piece(profile, lambda: _unmarshalled(chunks))
            except (OSError, ValueError) as exc:  # the rows still count (a full disk)
                self.trace_failure = exc

    def events(self) -> list[RawEvent]:
        """Every session's events, in order (once: they are let go as they are read)."""
        events: list[RawEvent] = []
        while self._events:
            events.extend(_unmarshalled(self._events.pop(0)))
        return events

    def _take_allocations(self, profile: Any) -> None:
        from torchscan_tui.worker.allocations import allocations_of

        if self.allocations is None:
            return  # a session before had too many to walk: the timeline would be partial
        try:
            found = allocations_of(profile.profiler.kineto_results, *ALL_TIME)
        except (AttributeError, RuntimeError, TypeError, ValueError):
            # A torch whose event tree reads otherwise: no timeline, rather than an error
            # raised into the script's step (this runs there, between two steps).
            found = None
        if found is None:
            self.allocations = None
        else:
            self.allocations.extend(found)

    def write_piece(self, profile: Any, events: Callable[[], list[RawEvent]]) -> None:
        """This session's trace, as the next piece of the window's."""
        assert self._trace_path is not None
        if self._directory is None:  # beside the destination: one file system, its room
            parent = self._trace_path.parent if str(self._trace_path.parent) else Path(".")
            self._directory = PrivateDir(parent, prefix=PIECES_PREFIX)  # swept if we are killed
        piece = Path(self._directory.path) / f"step-{len(self.pieces)}.json"
        mended = self._export(profile, piece, events)
        if mended is not None:
            self.mended.add(mended)
        self.pieces.append(piece)

    def merge_trace(self) -> Path:
        """The pieces as one trace at the destination, written atomically."""
        assert self._trace_path is not None
        if self.trace_failure is not None:
            raise self.trace_failure
        destination = self._trace_path
        write_atomically(destination, lambda out: merge_traces(self.pieces, out, destination),
                         overwrite=True, mode=0o600)  # fmt: skip
        return destination

    def discard(self) -> None:
        """The pieces' directory, gone (after the merge, or when none is made)."""
        if self._directory is not None:
            self._directory.remove()
            self._directory = None


def _plain(events: list[RawEvent], offset: int) -> list[tuple]:
    """``events`` as plain tuples (what marshal takes), their correlation ids moved by
    ``offset`` (0: kept; an id of 0 links nothing and stays 0)."""
    if not offset:
        return [tuple(event) for event in events]
    return [
        (*event[:6],
         event[6] + offset if event[6] else 0,
         event[7] + offset if event[7] else 0,
         *event[8:])
        for event in events
    ]  # fmt: skip


def _unmarshalled(chunks: list[bytes]) -> list[RawEvent]:
    from torchscan_tui.analysis.profiler_events import RawEvent

    events: list[RawEvent] = []
    for chunk in chunks:
        events.extend(map(RawEvent._make, marshal.loads(chunk)))
    return events


class _Header(msgspec.Struct):
    """A trace file's top-level fields, each as its text; its events one by one."""

    traceEvents: list[msgspec.Raw] = []  # noqa: N815 - Kineto's name


def _top_level(data: bytes) -> dict[str, msgspec.Raw]:
    return msgspec.json.decode(data, type=dict[str, msgspec.Raw])


def _events_of(data: bytes) -> list[msgspec.Raw]:
    return msgspec.json.decode(data, type=_Header).traceEvents


def _in_parts(events: list[msgspec.Raw]) -> Iterator[bytes]:
    for first in range(0, len(events), EVENTS_PER_WRITE):
        yield b",\n".join(events[first : first + EVENTS_PER_WRITE])


def merge_traces(pieces: list[Path], out: Any, destination: Path) -> None:
    """Write one Chrome trace of ``pieces`` (each a session's, in order) to ``out``: the
    first piece's top-level fields (its ``traceName`` the destination's), then every
    piece's events in order. One piece is read at a time; the times need no shifting
    (Kineto writes them from one base for the whole process)."""
    head = _top_level(pieces[0].read_bytes()) if pieces else {}
    out.write(b"{")
    for key, value in head.items():
        if key == "traceEvents":
            continue
        if key == "traceName":
            value = msgspec.Raw(msgspec.json.encode(str(destination)))
        out.write(msgspec.json.encode(key) + b": " + bytes(value) + b",\n")
    del head
    out.write(b'"traceEvents": [\n')
    written = False
    for piece in pieces:
        events = _events_of(piece.read_bytes())
        for part in _in_parts(events):
            if written:
                out.write(b",\n")
            out.write(part)
            written = True
        del events
    out.write(b"\n]}\n")
