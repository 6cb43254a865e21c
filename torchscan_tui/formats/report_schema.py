"""The types a report's fields must have, checked before anything shows them (no textual).

A report is a file from outside: a string where seconds are, a row that is a string, or
``input_shapes`` nested 900 deep would crash the app, or hang it, far from the cause. The
types are written once (a row's in :mod:`torchscan_tui.analysis.records`, where rows are
made; the report's around them here), as ``TypedDict``s; msgspec checks decoded JSON
against them at C speed (``msgspec.convert``), and the first mismatch is refused in one
line that names the file and the field (``row 3: operator: Expected `str`, got `int```).

Fields not listed are kept as they are: a newer writer's extra fields pass through.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, TypedDict, cast

import msgspec

from torchscan_tui.analysis.records import (
    KernelRow,
    MemoryBlock,
    ModulesBlock,
    Note,
    Overview,
    Ranks,
    Row,
    RowKind,
)
from torchscan_tui.formats.compact_records import (
    SITE_KEYS,
    SITE_KEYS_NO_STACK,
    UNSET,
    CompactSite,
    ReceivedSpread,
    compact_spread,
    spread_of_received,
)
from torchscan_tui.formats.row_memory import (
    ONE,
    compact,
    same_float,
    shared_shapes,
)

TRACE_SOURCE = "chrome trace"  # context.source of a report made of a trace file
RANK_TRACES_SOURCE = "rank traces"  # ... and of one made of a folder of rank traces


class PeakRss(TypedDict, total=False):
    """The spec's ``process_peak_rss`` metric (``run/process.py`` builds it)."""

    name: str
    value: float
    unit: str
    source: str
    command: list[str]
    command_process_value: float
    launcher_floor: float | None
    platform: str


class Totals(TypedDict, total=False):
    process_peak_rss: PeakRss | None


class ExitStatus(TypedDict, total=False):
    """How a pass's process ended (``run/process.py``), and what its peak covers."""

    exit_code: int | None
    signal: str | None
    cancelled: bool
    likely_oom: bool
    description: str
    rss_steps: int  # the peak pass was ended at this step (--rss-steps)
    rss_steps_unreached: int  # it was asked to, and the run ended before
    steps: int  # the optimizer steps the peak pass took (a plain pass counts them)
    stopped_by: str  # who ended the peak pass early: "you" (a key), "--timeout"


class UnprofiledSteps(TypedDict, total=False):
    """The script's steps as the peak pass ran them, without the profiler."""

    steps: int
    median_seconds: float
    min_seconds: float
    max_seconds: float
    startup_seconds: float | None  # about how long before the first step began
    torch_import_seconds: float | None  # of which the script's ``import torch``


class RunStatus(TypedDict, total=False):
    complete: bool
    note: str | None
    rss_samples: list[list[float]] | None
    rss_status: ExitStatus | None
    rss_wall_seconds: float | None
    profile_status: ExitStatus | None
    profile_leftovers: int | None
    unprofiled_steps: UnprofiledSteps | None


class Distributed(TypedDict, total=False):
    """A rank's trace's ``distributedInfo``, as read."""

    rank: int | None
    world_size: int | None
    backend: str | None


class WindowMemoryFigures(TypedDict, total=False):
    """The worker's memory over a window (``worker/window_memory.py``): its budget, what
    the steps grew it by while recording, where memory cut the window, and its resident
    set when the window opened and at its peak (``ru_maxrss``, once the rows were built)."""

    budget: int | None
    budget_source: str
    recorded_bytes: int
    cut_after: int | None
    window_start_rss: int | None
    peak_rss: int | None


class DevicePeakFigures(TypedDict, total=False):
    """The device allocator's peak over the window (``worker/device_peak.py``)."""

    allocated_bytes: int | None
    reserved_bytes: int | None
    source: str
    missing: str  # why there is none


class StepsContext(TypedDict, total=False):
    """Which steps a window's profile holds (``worker/steps.py``)."""

    source: str
    warmup: int
    requested: int
    seen: int
    profiled: int
    whole_run: bool
    step_seconds: list[float]
    profiler_steps: list[str]
    memory: WindowMemoryFigures


class Context(TypedDict, total=False):
    """Every context field the program reads, with its type: a report from outside that
    says ``"total_grouped_operators": "many"`` is refused where it is read, in one line,
    not a crash in a widget later. Fields not listed pass through."""

    device: str
    row_limit: int | None
    total_grouped_operators: int | None
    ranked_by: str
    torch_version: str | None
    source: str  # TRACE_SOURCE for a report made of a trace file
    activities: list[str]
    events: int
    events_grouped: int
    max_events: int
    device_events: int
    flops_counted: bool  # the profile had torch's with_flops on (--flops)
    call_sites: bool  # the rows carry their call sites (analysis/sites.py)
    call_sites_from: str  # where they came from: a traced step, a trace's Call stack
    call_sites_missing: str  # why the rows have none
    call_sites_step_seconds: float | None  # the traced step's wall time, tracing and all
    device_peak: DevicePeakFigures
    device_kind: str | None
    device_seconds_total: float | None
    device_seconds_attributed: float | None
    cpu_self_seconds_sum: float | None
    device_self_seconds_sum: float | None
    distributed: Distributed
    steps: StepsContext
    ranks: int
    ranks_streaming: bool
    world_size: int | None
    backend: str | None
    straggler: str | None
    straggler_evidence: str | None
    profiled: str  # what the worker profiled: "workload()", "whole script as __main__"


class Blocks(TypedDict, total=False):
    """The report's blocks that only some reports hold (a summary made when its inputs
    exist, what the session adds). A new block is one line here and its ``TypedDict``:
    every path a head takes (the channel, the session, the UI's state, saving and
    reopening) carries it as it is (docs/architecture.md)."""

    workload: dict[str, Any] | None
    run: RunStatus | None
    overview: Overview | None
    memory: MemoryBlock | None  # the allocator over the window (analysis/memory_timeline.py)
    modules: ModulesBlock | None  # the nn.Module tree (analysis/modules.py)
    ranks: Ranks | None


class Head(Blocks, total=False):
    """The report's fields but its rows."""

    context: Context
    diagnostics: list[Note]
    totals: Totals | None
    kernels: list[KernelRow]
    trace_path: str | None


class Report(Head, total=False):
    """A whole report: what :func:`torchscan_tui.formats.report.new_report` makes."""

    schema: str
    schema_version: int
    operators: list[Row]


_PATH = re.compile(r" - at `\$(.*)`$")


def _where(exc: Exception, offset: int = 0) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$[3].calls``` as ``row 4: calls: ...``."""
    text = str(exc)
    match = _PATH.search(text)
    if not match:
        return text
    what, path = text[: match.start()], match.group(1)
    row = re.match(r"\[(\d+)\]\.?", path)
    if row and offset >= 0:
        number, rest = int(row.group(1)) + offset + 1, path[row.end() :]
        return f"row {number}: {rest}: {what}" if rest else f"row {number}: {what}"
    return f"{path.lstrip('.') or 'the report'}: {what}"


if TYPE_CHECKING:  # a row as any other to whoever holds one
    ReceivedRow = Row
else:

    class ReceivedRow(Row, total=False):
        """``Row`` as the channel decodes it: its call sites straight into compact
        structs and its per-step spread into a struct (packed by
        :func:`share_common_values`), so no dict is made and taken apart for each; every
        field checked as ``Row``'s."""

        sites: list[CompactSite]
        cpu_self_seconds_per_step: ReceivedSpread


def check_rows(rows: object, offset: int = 0) -> None:
    """Raise ValueError naming the first row (counted from 1, after ``offset`` rows) and
    field that does not have its type."""
    try:
        msgspec.convert(rows, list[Row])
    except msgspec.ValidationError as exc:
        raise ValueError(_where(exc, offset)) from None


def accept_rows(rows: object, offset: int = 0) -> None:
    """Rows just decoded from outside: checked (:func:`check_rows`), then their common
    values shared (:func:`share_common_values`) before anyone holds them."""
    check_rows(rows, offset)
    assert isinstance(rows, list)
    share_common_values(rows)


class _EmptyMapping(dict):
    """An empty dict that refuses to change, shared by every row without callers."""

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("rows share this empty mapping: copy it to change it")

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = setdefault = pop = popitem = clear = _refuse  # type: ignore[assignment]


class _SharedSequence(list):
    """A list that refuses to change, shared by every row that holds it."""

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("rows share this list: copy it to change it")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


NO_CALLERS: dict = _EmptyMapping()
NO_NOTES: list = _SharedSequence()


def shared_sites(sites: list, own: Any) -> list:
    """A row's call sites, compact (formats/compact_records.py), sharing what repeats:
    their lines' and stacks' text, a share of 1.0, a lone site's time (the row's own,
    ``own``). The list is its exact size. A site the channel decoded straight into a
    struct is made again with the shared values; a site of other keys stays a dict,
    shared the same way in place."""
    compacted = sites[:]  # a slice is its exact size (decoded lists keep room)
    lone = len(sites) == 1
    for at, site in enumerate(sites):
        if type(site) is CompactSite:  # attributes: a struct's items go through Python
            text, seconds, share = site.site, site.cpu_self_seconds, site.share
            stack: Any = site.stack
            layout: object = SITE_KEYS
        else:
            layout = type(site) is dict and tuple(site)
            text, seconds, share = site["site"], site["cpu_self_seconds"], site["share"]
            stack = site.get("stack", UNSET)
        text = sys.intern(text)
        if stack is not UNSET:
            stack = sys.intern(stack)
        if same_float(share, ONE):
            share = ONE
        if lone and same_float(seconds, own):
            seconds = own  # the row's one site: all of its time
        if layout == SITE_KEYS or layout == SITE_KEYS_NO_STACK:  # UNSET: no stack
            compacted[at] = CompactSite(text, seconds, share, stack)
        else:
            site["site"], site["cpu_self_seconds"], site["share"] = text, seconds, share
            if stack is not UNSET:
                site["stack"] = stack
    return compacted


def share_common_values(rows: list[Row]) -> None:
    """Let freshly decoded rows hold one copy of what many of them hold: operator names,
    kinds, the empty callers and diagnostics most rows have, equal shapes, equal times (a
    leaf op's total is its self time, a lone call site's time the row's, most shares
    1.0), and their keys (each row is replaced by an equal dict that shares them:
    formats/row_memory.py).

    Decoded JSON gives every row its own: ~23 MiB of copies at 100k rows, which stay
    (freed later, they would leave the allocator's arenas as full). Done on each batch as
    it is decoded, the copies freed are reused by the next batch's decoding instead.
    Values stay equal: rows compare, export and save as before. The rows are checked
    ones (decoded as :data:`ReceivedRow`, or through :func:`check_rows`): a flat shape's
    dims are then ints (``shared_shapes`` relies on it).
    """
    for index, row in enumerate(rows):
        row["operator"] = sys.intern(row["operator"])
        row["input_shapes"] = shared_shapes(row["input_shapes"])
        kind = row.get("kind")
        if kind is not None:
            row["kind"] = cast(RowKind, sys.intern(kind))  # the same kind, one copy of it
        if row.get("callers") == {}:
            row["callers"] = NO_CALLERS
        notes = row.get("diagnostics")
        if notes == []:
            row["diagnostics"] = NO_NOTES
        elif notes:  # a live run's row-level notes: the same on every row
            row["diagnostics"] = _shared_notes(notes)
        own = row.get("cpu_self_seconds")
        if same_float(row.get("cpu_total_seconds"), own):  # a leaf op: total is self
            row["cpu_total_seconds"] = own
        sites = row.get("sites")
        if sites:  # call sites and their stacks repeat by line
            row["sites"] = shared_sites(sites, own)
        spread = row.get("cpu_self_seconds_per_step")
        if type(spread) is ReceivedSpread:  # the channel's: decoded as a struct
            row["cpu_self_seconds_per_step"] = spread_of_received(spread)
        elif spread is not None:
            row["cpu_self_seconds_per_step"] = compact_spread(spread)
        rows[index] = cast(Row, compact(cast(dict, row)))


_NOTES_SHARED: dict[tuple, list[Note]] = {}
_NOTES_KEPT = 64  # distinct lists of notes remembered (a report has a handful)


def _shared_notes(notes: list[Note]) -> list[Note]:
    """One unchangeable list for rows whose notes are equal."""
    try:
        key = tuple((note["code"], note["message"]) for note in notes)
    except (KeyError, TypeError):
        return notes
    shared = _NOTES_SHARED.get(key)
    if shared is None:
        if len(_NOTES_SHARED) >= _NOTES_KEPT:
            _NOTES_SHARED.clear()
        shared = _NOTES_SHARED[key] = _SharedSequence(notes)
    return shared


def check_head(report: dict) -> None:
    """Raise ValueError naming the first of the report's other fields that is mistyped."""
    head = {key: value for key, value in report.items() if key != "operators"}
    try:
        msgspec.convert(head, Head)
    except msgspec.ValidationError as exc:
        raise ValueError(_where(exc, -1)) from None
