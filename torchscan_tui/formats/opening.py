"""Open any profile file: a saved report, or a Chrome/Kineto trace (file, ``.gz``, or a
``tensorboard_trace_handler`` directory), as a report (no torch, no textual).

A report is recognised by its first bytes and decoded here; the trace machinery
(:mod:`trace_decode`, :mod:`trace_import` and the grouping behind it) is imported only
when the file is a trace, so reopening a report starts ~25 ms sooner. A trace cut short
opens up to its cut, marked incomplete (:mod:`trace_salvage`).
"""

from __future__ import annotations

import os
import zlib
from contextlib import closing
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from torchscan_tui.common.gcpause import gc_paused
from torchscan_tui.common.memory import map_large_blocks, return_free_memory
from torchscan_tui.formats.atomic import ExportError
from torchscan_tui.formats.early_rows import EarlyRows
from torchscan_tui.formats.jsonio import (
    Progress,
    inflated_size,
    no_progress,
    open_regular,
    opened_file_chunks,
)
from torchscan_tui.formats.kept_trace import KeptTrace
from torchscan_tui.formats.report import (
    PendingRows,
    ReportError,
    decode_report,
    not_json,
    read_file,
    validate_report,
)
from torchscan_tui.formats.report_head import file_identity, looks_like_report, open_report_ends
from torchscan_tui.formats.report_schema import Report

if TYPE_CHECKING:
    from torchscan_tui.formats.trace.columns import TraceColumns
    from torchscan_tui.formats.trace.decode import DecodedTrace

TRACE_SUFFIXES = (".json", ".json.gz")
FIRST_PAGE_ROWS = 200  # decoded before the app starts: more than any screen shows
# A trace this big (~1.5 s to open here, 64 MiB) opens in the app, its first rows shown
# while the rest is read (run/trace_source.py); a .gz file by the size its trailer says
# it inflates to, or from this size on disk whatever the trailer says (one inflates
# 5-30x: the shared resnet50 trace 30x).
IN_APP_BYTES = 64 << 20
IN_APP_GZIP_BYTES = 8 << 20


def traces_in(folder: Path) -> list[Path]:
    """The trace files of a ``tensorboard_trace_handler`` directory, newest first."""
    traces = [p for p in folder.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)]
    if not traces:
        raise ReportError(f"{folder} holds no .json or .json.gz trace: pick a trace file")
    return sorted(traces, key=lambda path: path.stat().st_mtime, reverse=True)


def newest_trace_in(folder: Path) -> Path:
    return traces_in(folder)[0]


class Opened(NamedTuple):
    """A profile file opened: its report, the file it came from, the rows not decoded
    yet, and the trace itself held open when the file was one (what ``t`` exports)."""

    report: Report
    source: str
    pending: PendingRows
    trace: KeptTrace | None = None


def open_profile(
    path: str | os.PathLike, progress: Progress = no_progress, fork: bool = True
) -> tuple[Report, str]:
    """A saved report or a trace (file, .gz, or trace-handler directory) as a report.

    Returns the report and the file it came from; ``progress(stage, fraction)`` hears of
    reading, parsing and grouping. Raises ReportError with a one-line message for anything
    else. ``fork=False``: a big trace's summaries are made in this process too, not beside
    its grouping (:func:`~torchscan_tui.formats.trace.reader.report_from_columns`).
    """
    opened = open_profile_paged(path, progress, first_page=None, fork=fork)
    return opened.report, opened.source


def open_profile_paged(
    path: str | os.PathLike,
    progress: Progress = no_progress,
    first_page: int | None = FIRST_PAGE_ROWS,
    keep_trace: bool = False,
    early: EarlyRows | None = None,
    fork: bool = True,
) -> Opened:
    """As :func:`open_profile`, but a saved report's rows past the first ``first_page``
    come back undecoded, for the caller to decode once the first rows are on screen.
    ``keep_trace``: a trace comes back held open too, for export (the caller closes it).
    ``early``: a trace read a piece at a time hands the rows of its first part over
    while the rest is read (:mod:`~torchscan_tui.formats.early_rows`).
    """
    location = Path(path)
    if location.is_dir():
        location = newest_trace_in(location)
    source = str(location)
    try:
        return _open(source, progress, first_page, keep_trace, early, fork)
    except RecursionError:
        raise ReportError(
            f"{source} nests its JSON too deeply (over ~1000 levels; no profile does): "
            "it is damaged, or not a profile"
        ) from None


def opens_in_app(path: str) -> bool:
    """Whether ``path`` is a trace file big enough to be read in the app (see
    :data:`IN_APP_BYTES`): a regular file whose first bytes start a trace's event array,
    not a report's. Anything else, or a file that cannot be read, is opened before the
    app starts, as before, so its errors are said the same way."""
    try:
        raw = open_regular(path)  # one open: its size, trailer and first bytes
    except OSError:
        return False
    with raw:
        if not _big_enough(path, raw.fileno()):
            return False
        from torchscan_tui.formats.trace.salvage import EVENTS_KEY

        try:
            with closing(opened_file_chunks(raw, path)) as chunks:
                first = next(chunks, b"")
        except (OSError, ValueError, EOFError, zlib.error):
            return False
    return not looks_like_report(first) and EVENTS_KEY.search(first) is not None


def _big_enough(path: str, descriptor: int) -> bool:
    """Whether the open file holds :data:`IN_APP_BYTES` of JSON: a ``.gz`` by the size
    its trailer says (an estimate: a trailer that overstates only has the file read in
    the app, as any big one is), or by its size on disk."""
    size = os.fstat(descriptor).st_size
    if not path.endswith(".gz"):
        return size >= IN_APP_BYTES
    if size >= IN_APP_GZIP_BYTES:
        return True
    said = inflated_size(descriptor)
    return said is not None and said >= IN_APP_BYTES


def _open(
    source: str,
    progress: Progress,
    first_page: int | None,
    keep_trace: bool,
    early: EarlyRows | None = None,
    fork: bool = True,
) -> Opened:
    if early is not None:  # it hears how far the reading is, and stops it when asked
        progress = early.listen(progress)
    with gc_paused():
        if first_page is not None:
            ends = open_report_ends(source, first_page)
            if ends is not None:  # a big report: its first page now, the rest read later
                return Opened(validate_report(ends[0], source), source, ends[1])
        try:
            read = file_identity(os.stat(source))
        except OSError:
            read = None  # read_file names what is wrong
        streamed = _streamed_trace(source, progress, early, fork)
        cut_short = False
        if streamed is None:
            data = read_file(source, progress)
            if looks_like_report(data):
                try:
                    progress("parsing", 0.0)
                    report, pending = decode_report(data, source, first_page)
                except ValueError as exc:
                    raise not_json(source, exc) from None
                progress("parsing", 1.0)
                return Opened(report, source, pending)
            document, cut_short = _decoded(data, source, progress)
            del data
            from torchscan_tui.formats.trace.decode import DecodedTrace

            if not isinstance(document, DecodedTrace):
                return Opened(validate_report(document, source), source, PendingRows())
            from torchscan_tui.formats.trace.columns import read_columns

            streamed = document, read_columns([document.events], source)
            document.events = []  # read: the columns hold what is used
        from torchscan_tui.formats.trace.reader import report_from_columns

        header, columns = streamed
        progress("grouping", 0.0)
        report = report_from_columns(columns, header, source, progress, cut_short, fork=fork)
        progress("grouping", 1.0)
        trace = _kept_as_read(source, read) if keep_trace else None
        return Opened(report, source, PendingRows(), trace)


def _kept_as_read(source: str, read: tuple | None) -> KeptTrace | None:
    """The trace file held open for export, if it is still the file that was read (a
    file swapped since is not the trace these rows came from: none is kept)."""
    try:
        trace = KeptTrace.keep(source)
    except ExportError:
        return None
    if read is None or file_identity(os.fstat(trace.fileno())) != read:
        trace.close()
        return None
    return trace


def _streamed_trace(
    source: str, progress: Progress, early: EarlyRows | None = None, fork: bool = True
) -> tuple[DecodedTrace, TraceColumns] | None:
    """A trace file's fields and its events read into columns as it is decoded, a piece at
    a time (:mod:`~torchscan_tui.formats.trace.stream`); None for a saved report (told by
    its first bytes, before the trace machinery is imported) and for a file that is not
    such a trace or fails anywhere: read whole, it is opened, repaired or refused (with
    the message naming the fix) as before. ``early`` watches the reading (see
    :func:`open_profile_paged`); its ReadingStopped goes through. With ``fork``, a big
    file's second half is read in a forked child at the same time
    (:mod:`~torchscan_tui.formats.trace.halves`), from the same open file (``early``
    then watches the first half's reading)."""
    try:
        raw = open_regular(source)
    except OSError:
        return None  # read whole, the error names what is wrong
    with raw, closing(opened_file_chunks(raw, source, progress)) as chunks:
        try:
            first = next(chunks, b"")
        except (OSError, ValueError, EOFError, zlib.error):
            return None
        if looks_like_report(first):
            return None
        from torchscan_tui.formats.trace.columns import ColumnReader
        from torchscan_tui.formats.trace.halves import read_in_halves
        from torchscan_tui.formats.trace.stream import NotStreamable, stream_trace

        map_large_blocks()  # each piece's pages given back as it is let go
        try:
            halves = read_in_halves(raw.fileno(), source, progress, early) if fork else None
            if halves is not None:
                header, columns = halves.header, halves.columns
            else:
                reader = ColumnReader(source)
                consume = reader.add if early is None else early.consume(reader)
                header = stream_trace(chain([first], chunks), consume)
                columns = reader.finish()
        except (NotStreamable, ReportError, OSError, ValueError, EOFError, zlib.error):
            return None
    # The pieces' events and the lists made of them are garbage now, below the columns
    # in glibc's heap: ~100 MiB of a 1M-event trace's, handed back before grouping grows.
    # Once, not after each piece: the next piece's decode would fault them in again.
    return_free_memory()
    return header, columns


def _decoded(data: bytes, source: str, progress: Progress) -> tuple[object, bool]:
    """The file decoded (a trace, or any JSON), and whether it was a trace cut short and
    read up to its cut; a ReportError for anything else that is not JSON."""
    from torchscan_tui.formats.trace.decode import decode_trace

    try:
        return decode_trace(data, progress), False
    except ValueError as exc:
        from torchscan_tui.formats.trace.salvage import decode_cut_trace

        document = decode_cut_trace(data, progress)
        if document is None:
            raise not_json(source, exc) from None
        return document, True
