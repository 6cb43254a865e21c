"""The report: schema, save and load (no torch, no textual).

A report is the JSON the headless ``--json`` mode writes and the TUI saves: the profile
report of :func:`torchscan_tui.profile_workload` with ``totals.process_peak_rss`` and a
``workload`` block appended, as the spec asks. Loading validates enough that a file which
is not a report, or one from a newer schema, gets a one-line message instead of a crash.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from torchscan_tui.analysis.compare import COMPARE_SCHEMA
from torchscan_tui.analysis.records import KernelRow, Note, Row
from torchscan_tui.formats.atomic import write_text_atomically
from torchscan_tui.formats.compact_records import as_plain, is_compact
from torchscan_tui.formats.jsonio import (
    NotARegularFile,
    Progress,
    TooLargeWhenInflated,
    TooManyObjects,
    as_utf8,
    check_object_count,
    decode_json,
    no_progress,
    read_bytes,
)
from torchscan_tui.formats.report_pages import PendingRows, first_page_of
from torchscan_tui.formats.report_schema import (
    Blocks,
    Context,
    Head,
    Report,
    RunStatus,
    Totals,
    accept_rows,
    check_head,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

SCHEMA_NAME = "torchscan-tui/report"
SCHEMA_VERSION = 1


def new_report(
    *,
    operators: list[Row] | None = None,
    context: Context | None = None,
    kernels: list[KernelRow] | None = None,
    diagnostics: list[Note] | None = None,
    totals: Totals | None = None,
    trace_path: str | None = None,
    **blocks: Unpack[Blocks],
) -> Report:
    """The one way a report is made (the live profile, a run not measured yet, a trace
    read as a report, the tests): the schema's keys first, every figure not given missing
    (None or empty), never zero; then the ``blocks`` given (``overview``, ``ranks``,
    ``workload``, ``run``: see :class:`Blocks`), in the order given, those given as None
    left out (the worker's report has no workload or run: the session adds them)."""
    report: Report = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": operators if operators is not None else [],
        "context": context if context is not None else {},
        "kernels": kernels if kernels is not None else [],
        "diagnostics": diagnostics if diagnostics is not None else [],
        "totals": totals if totals is not None else {"process_peak_rss": None},
        "trace_path": trace_path,
    }
    report.update({key: value for key, value in blocks.items() if value is not None})  # type: ignore[typeddict-item]
    return report


def head_of(report: Report) -> Head:
    """A report's head: every block but its rows (and the schema's name and version)."""
    kept = {key: value for key, value in report.items()
            if key not in ("operators", "schema", "schema_version")}  # fmt: skip
    return cast(Head, kept)


class ReportError(Exception):
    """A file could not be read as a report; the message names it and says what to do."""


def finite(value):
    """JSON never holds NaN or Infinity: such floats become None (a missing figure)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if is_compact(value):  # a row's call site or spread: its dict, walked
        return finite(as_plain(value))
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [finite(item) for item in value]
    return value


_ROWS_STANDIN = "\x00rows\x00"  # never in a report: JSON escapes NUL in any string
# one encoder for every row; a row's compact call sites and spread written as their dicts
_encode_compact = json.JSONEncoder(allow_nan=False, default=as_plain).encode


def _row_json(row: object) -> str:
    """A row as one line of JSON; its NaN or infinite figures (rare) become null."""
    try:
        return _encode_compact(row)
    except ValueError:  # a NaN or an infinity: only then walk the row for them
        return _encode_compact(finite(row))


def dumps_report(report: Mapping[str, Any]) -> str:
    """The report as JSON text: indented, except that each row is one line of its own.

    A row per line keeps a 100k-row report a quarter smaller than indenting every field
    (27 -> 21 MiB), greppable and diffable row by row, and lets a reader take the first
    rows by their line breaks without scanning the others (:func:`_first_page`). It is
    also written faster: rows go through the C encoder (the indenting one is Python),
    and only a row that holds a NaN is walked to replace it.
    """
    rows = report.get("operators") if isinstance(report, dict) else None
    if isinstance(rows, list) and rows:
        text = _indented_json({**report, "operators": _ROWS_STANDIN})
        standin = json.dumps(_ROWS_STANDIN)
        if text.count(standin) == 1:  # else some string held the stand-in's very text
            lines = ",\n  ".join([_row_json(row) for row in rows])
            return text.replace(standin, "[\n  " + lines + "\n ]")
    return _indented_json(report)


def _indented_json(value: object) -> str:
    return json.dumps(finite(value), indent=1, allow_nan=False) + "\n"  # finite: as dicts


def save_report(report: Report, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write ``report`` atomically as JSON; refuses to clobber unless ``overwrite``."""
    return write_text_atomically(path, dumps_report(report), overwrite=overwrite)


def incomplete_run(run: RunStatus | None, why: str) -> RunStatus:
    """A report's ``run`` marked incomplete, with ``note`` saying why (shown on opening)."""
    return {**(run or {}), "complete": False, "note": why}


def validate_report(data: object, source: str) -> Report:
    """Check the shape of a loaded report; raise ReportError naming ``source``."""
    if isinstance(data, dict) and data.get("schema") == COMPARE_SCHEMA:
        runs = " ".join(
            shlex.quote(str(data.get(side) or side.upper())) for side in ("before", "after")
        )
        raise ReportError(
            f"{source} is a comparison (written by --compare --json), not a report: "
            f"see it with: torchscan-tui --compare {runs}"
        )
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise ReportError(
            f'{source} is not a torchscan-tui report (no "schema": "{SCHEMA_NAME}") nor a '
            "torch.profiler trace (no traceEvents): open a report written by --json or w, "
            "or a trace from export_chrome_trace or tensorboard_trace_handler"
        )
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise ReportError(f"{source} has no integer schema_version: it is damaged")
    if version > SCHEMA_VERSION:
        raise ReportError(
            f"{source} was written by a newer torchscan-tui (schema {version}, this one reads "
            f"{SCHEMA_VERSION}): upgrade torchscan-tui to open it"
        )
    if not isinstance(data.get("operators"), list) or not isinstance(data.get("context"), dict):
        raise ReportError(f"{source} lacks operators or context: it is damaged")
    try:
        check_head(data)
        accept_rows(data["operators"])
    except ValueError as exc:
        raise ReportError(
            f"{source} is damaged ({exc}): open an intact copy, or write the report again"
        ) from None
    return cast(Report, data)  # its head and rows were just checked against the types


def decode_report(
    data: bytes, source: str, first_page: int | None = None
) -> tuple[Report, PendingRows]:
    """A validated report from its bytes, with the rows not decoded yet (none, unless
    ``first_page`` asks for only that many rows now).

    Raises ValueError for text that is not JSON, ReportError for JSON that is no report.
    """
    if first_page is not None:
        paged = first_page_of(data, first_page)
        if paged is not None:
            return validate_report(paged[0], source), paged[1]
    return validate_report(decode_json(data), source), PendingRows()


def read_file(path: str | os.PathLike, progress: Progress = no_progress) -> bytes:
    """A file's bytes (decompressed for ``.gz``), or a ReportError naming it and the fix."""
    source = os.fspath(path)
    try:
        data = read_bytes(source, progress)
        check_object_count(data)
    except FileNotFoundError:
        raise ReportError(f"{source} does not exist: check the path") from None
    except IsADirectoryError:
        raise ReportError(f"{source} is a directory, not a report file") from None
    except PermissionError:
        raise ReportError(f"{source} cannot be read: permission denied") from None
    except NotARegularFile as exc:
        raise ReportError(f"{source} cannot be opened: {exc}; give a profile file") from None
    except (TooLargeWhenInflated, TooManyObjects) as exc:
        raise ReportError(f"{source} is refused: {exc}") from None
    except EOFError as exc:
        raise not_json(source, exc) from None
    except zlib.error as exc:
        raise ReportError(
            f"{source} cannot be decompressed ({exc}): it is not gzip, or it is damaged"
        ) from None
    except OSError as exc:  # a loop of links, a name too long, an I/O error
        raise ReportError(f"{source} cannot be read: {exc.strerror or exc}") from None
    if not data or data.isspace():  # a run that died before writing, a failed copy; no copy
        raise ReportError(f"{source} is empty: open a saved report or a torch.profiler trace")
    try:
        return as_utf8(data)
    except (UnicodeError, ValueError) as exc:
        raise not_json(source, exc) from None


def not_json(source: str, problem: Exception) -> ReportError:
    return ReportError(
        f"{source} is not valid JSON ({problem}): a truncated trace or report, or not a profile"
    )


def read_json(path: str | os.PathLike) -> object:
    """A JSON file (``.gz`` too) or a ReportError naming it and saying what to do."""
    source = os.fspath(path)
    data = read_file(source)
    try:
        return decode_json(data)
    except ValueError as exc:
        raise not_json(source, exc) from None


def load_report(path: str | os.PathLike) -> Report:
    return validate_report(read_json(path), os.fspath(path))
