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
import re
import shlex
import zlib
from collections.abc import Iterator
from pathlib import Path

from torchscan_tui.analysis.compare import COMPARE_SCHEMA
from torchscan_tui.formats import jsonio
from torchscan_tui.formats.atomic import write_text_atomically
from torchscan_tui.formats.jsonio import (
    NotARegularFile,
    Progress,
    TooLargeWhenInflated,
    as_utf8,
    decode_json,
    no_progress,
    read_bytes,
)
from torchscan_tui.formats.report_schema import check_head, check_rows

SCHEMA_NAME = "torchscan-tui/report"
SCHEMA_VERSION = 1
ROW_BATCH = 1000  # rows per message on the channel, per replayed batch, per part to decode
FIRST_PAGE_ROWS = 200  # decoded before the app starts: more than any screen shows

msgspec = jsonio.msgspec
if msgspec is not None:
    # Scan without building: each top-level value, then each row, as its JSON text.
    _TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
    _ROW_TEXTS = msgspec.json.Decoder(list[msgspec.Raw])


class ReportError(Exception):
    """A file could not be read as a report; the message names it and says what to do."""


def finite(value):
    """JSON never holds NaN or Infinity: such floats become None (a missing figure)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [finite(item) for item in value]
    return value


_ROWS_STANDIN = "\x00rows\x00"  # never in a report: JSON escapes NUL in any string
_encode_compact = json.JSONEncoder(allow_nan=False).encode  # one encoder for every row


def _row_json(row: object) -> str:
    """A row as one line of JSON; its NaN or infinite figures (rare) become null."""
    try:
        return _encode_compact(row)
    except ValueError:  # a NaN or an infinity: only then walk the row for them
        return _encode_compact(finite(row))


def dumps_report(report: dict) -> str:
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
    return json.dumps(finite(value), indent=1, allow_nan=False) + "\n"


def save_report(report: dict, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write ``report`` atomically as JSON; refuses to clobber unless ``overwrite``."""
    return write_text_atomically(path, dumps_report(report), overwrite=overwrite)


def incomplete_run(run: dict | None, why: str) -> dict:
    """A report's ``run`` marked incomplete, with ``note`` saying why (shown on opening)."""
    return {**(run or {}), "complete": False, "note": why}


def validate_report(data: object, source: str) -> dict:
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
        raise ReportError(f'{source} is not a torchscan-tui report (no "schema": "{SCHEMA_NAME}")')
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
        check_rows(data["operators"])
    except ValueError as exc:
        raise ReportError(
            f"{source} is damaged ({exc}): open an intact copy, or write the report again"
        ) from None
    return data


def _json_array(texts: list) -> bytes:
    """The JSON array of these JSON texts (bytes-like), without decoding them."""
    return b"[" + b",".join(texts) + b"]"


class PendingRows:
    """Rows of a report not decoded yet, as JSON arrays of ``ROW_BATCH`` rows, and the
    list they go to once decoded.

    Decoding all of a 100k-row report's rows takes ~0.3 s here; splitting the file into
    rows without decoding them, a fifth of that. So a reopened report shows its first
    page while the rest decode, a part at a time (:meth:`split`, :meth:`decode`). The
    rest may come as one array (a report written a row per line, cut after its first
    page), split into rows only when first asked, or as the rows' texts (views of the
    file's bytes). Either way, parts are copied out only as they are handed out, after
    the first page is painted; the file's bytes go with the last copy, and each part once
    decoded: memory holds the file and its rows together only briefly.
    """

    def __init__(
        self,
        parts: list[tuple[bytes, int]] | None = None,
        into: list | None = None,
        texts: list | None = None,
        size: int = ROW_BATCH,
        array: bytes | memoryview | None = None,
        skip: int = 0,
    ):
        self._parts = parts or []
        self._texts = texts or []
        self._array, self._skip = array, skip
        self._size = size
        self._into = into

    @classmethod
    def of_texts(cls, texts: list, into: list, size: int = ROW_BATCH) -> PendingRows:
        """From the rows' JSON texts (bytes-like), to go out in parts of ``size`` rows."""
        return cls(into=into, texts=texts, size=size)

    @classmethod
    def of_array(
        cls, array: bytes | memoryview, into: list, skip: int = 0, size: int = ROW_BATCH
    ) -> PendingRows:
        """The rows of a JSON array (bytes-like) but its first ``skip``, split into rows
        only when first asked (their number, their parts): the split scans every row,
        which the first page need not wait for."""
        return cls(into=into, size=size, array=array, skip=skip)

    def _split_array(self) -> None:
        if self._array is not None:
            self._texts = _ROW_TEXTS.decode(self._array)[self._skip :]
            self._array = None

    def __len__(self) -> int:
        self._split_array()
        return sum(rows for _, rows in self._parts) + len(self._texts)

    def _take_parts(self) -> Iterator[tuple[bytes, int]]:
        """Every part, in order, each text copied into one as it is reached; once only."""
        self._split_array()
        parts, self._parts = self._parts, []
        texts, self._texts = self._texts, []
        yield from parts
        for start in range(0, len(texts), self._size):
            chunk = texts[start : start + self._size]
            yield _json_array(chunk), len(chunk)

    def split(self) -> Iterator[PendingRows]:
        """One part each, in order, going to the same list; handed out once."""
        for part in self._take_parts():
            yield PendingRows([part], self._into)

    def decode(self) -> list[dict]:
        """The rows, decoded, and appended to the list they go to; once only.

        Raises ValueError naming the first row and field of the wrong type.
        """
        rows = [row for text, _ in self._take_parts() for row in decode_json(text)]
        check_rows(rows, offset=len(self._into) if self._into is not None else 0)
        if self._into is not None:
            self._into.extend(rows)
        return rows


_LINE_BREAK = re.compile(b"\n")  # re searches a memoryview in place: no copy of the rows


def _rows_by_line(array: memoryview, rows: int) -> list | None:
    """The first ``rows`` rows of a JSON array written a row per line (as
    :func:`dumps_report` does), found by line breaks alone; None for any other layout.

    The lines taken must decode to as many rows: a row per line. They are the array's
    first rows whatever follows, as a line break can only fall between JSON tokens.
    """
    if array[:5] != b"[\n  {":
        return None
    cut, taken = 1, 0  # cut: the line break after the last row taken
    while taken < rows:
        line_break = _LINE_BREAK.search(array, cut + 1)
        if line_break is None:  # the last line, " ]": no more rows
            break
        cut, taken = line_break.start(), taken + 1
    try:
        page = decode_json(b"[" + bytes(array[1:cut]).rstrip(b",") + b"]")
    except ValueError:
        return None
    return page if isinstance(page, list) and len(page) == taken else None


_ROWS_KEY = b'\n "operators": '
_ROWS_END = b'\n ],\n "context": '  # how :func:`dumps_report` closes the rows
_HEADER_LIMIT = 4096  # the keys before the rows: a few lines


def _located_rows(data: bytes) -> tuple[dict, memoryview] | None:
    """For a report laid out as :func:`dumps_report` writes it: the document with an
    empty rows list, and the rows' JSON array in place, not scanned. None for any other
    layout.

    Top-level keys are the only lines indented by one space (nested ones have more, rows
    start with two, and no JSON string holds a line break), so the rows' key is found in
    the first lines and their end from the file's end: the few lines around the rows are
    all that is decoded, not 20 MiB of rows (~40 ms here before the first frame).
    """
    start = data.find(_ROWS_KEY, 0, _HEADER_LIMIT)
    end = data.rfind(_ROWS_END)
    if start < 0 or end < start:
        return None
    array_start, array_end = start + len(_ROWS_KEY), end + len(b"\n ]")
    try:
        document = decode_json(data[:array_start] + b"[]" + data[array_end:])
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get("operators") != []:
        return None
    return document, memoryview(data)[array_start:array_end]


def _first_page(data: bytes, rows: int) -> tuple[dict, PendingRows] | None:
    """The document with only its first ``rows`` rows decoded, or None when the file
    is not an object whose operators are a list (the full decode then says what it is).

    A report as we write it (a row per line) is cut in place: the lines around the rows
    are decoded, the first rows are cut by their line breaks, and the other rows are
    split (and so scanned as JSON) only after the first page shows
    (:meth:`PendingRows.of_array`): no scan and no copy of them before it. Rows damaged
    past the first page are then found by that split, which says so (see
    :class:`~torchscan_tui.run.sources.ReportSource`). A file laid out otherwise is scanned
    whole first, so damage is refused here. Rows not a line each are split at once.
    """
    try:
        located = _located_rows(data)
        if located is not None:
            document, operators = located
        else:
            top = _TOP_LEVEL.decode(data)
            operators = memoryview(top["operators"])
            document = {  # the rows keep their place among the keys, decoded below
                key: None if key == "operators" else decode_json(value)
                for key, value in top.items()
            }
        page = _rows_by_line(operators, rows)
        if page is None:
            texts = _ROW_TEXTS.decode(operators)
            page = decode_json(_json_array(texts[:rows]))
            pending = PendingRows.of_texts(texts[rows:], into=page)
        else:
            pending = PendingRows.of_array(operators, into=page, skip=len(page))
    except (ValueError, KeyError):
        return None
    document["operators"] = page
    return document, pending


def decode_report(
    data: bytes, source: str, first_page: int | None = None
) -> tuple[dict, PendingRows]:
    """A validated report from its bytes, with the rows not decoded yet (none, unless
    ``first_page`` asks for only that many rows now: msgspec is needed for that).

    Raises ValueError for text that is not JSON, ReportError for JSON that is no report.
    """
    if first_page is not None and msgspec is not None:
        paged = _first_page(data, first_page)
        if paged is not None:
            return validate_report(paged[0], source), paged[1]
    return validate_report(decode_json(data), source), PendingRows()


def read_file(path: str | os.PathLike, progress: Progress = no_progress) -> bytes:
    """A file's bytes (decompressed for ``.gz``), or a ReportError naming it and the fix."""
    source = os.fspath(path)
    try:
        data = read_bytes(source, progress)
    except FileNotFoundError:
        raise ReportError(f"{source} does not exist: check the path") from None
    except IsADirectoryError:
        raise ReportError(f"{source} is a directory, not a report file") from None
    except PermissionError:
        raise ReportError(f"{source} cannot be read: permission denied") from None
    except NotARegularFile as exc:
        raise ReportError(f"{source} cannot be opened: {exc}; give a profile file") from None
    except TooLargeWhenInflated as exc:
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


def load_report(path: str | os.PathLike) -> dict:
    return validate_report(read_json(path), os.fspath(path))
