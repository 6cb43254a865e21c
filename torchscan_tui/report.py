"""The report: schema, save and load (no torch, no textual).

A report is the JSON the headless ``--json`` mode writes and the TUI saves: the profile
report of :func:`torchscan_tui.profile_workload` with ``totals.process_peak_rss`` and a
``workload`` block appended, as the spec asks. Loading validates enough that a file which
is not a report, or one from a newer schema, gets a one-line message instead of a crash.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from . import jsonio
from .atomic import write_text_atomically
from .jsonio import Progress, decode_json, no_progress, read_bytes

SCHEMA_NAME = "torchscan-tui/report"
SCHEMA_VERSION = 1
ROW_BATCH = 1000  # rows per message on the channel, per replayed batch, per part to decode
REPORT_KEYS = (
    "schema", "schema_version", "operators", "context", "diagnostics", "totals",
    "trace_path", "workload", "run",
)  # fmt: skip
FIRST_PAGE_ROWS = 200  # decoded before the app starts: more than any screen shows

msgspec = jsonio.msgspec
if msgspec is not None:
    # Scan without building: each top-level value, then each row, as its JSON text.
    _TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
    _ROW_TEXTS = msgspec.json.Decoder(list[msgspec.Raw])
    # The same in one pass for a file with only the keys a report has (an empty Raw
    # stands for a missing key, a Raw cannot be optional).
    _REPORT_PARTS = msgspec.json.Decoder(
        msgspec.defstruct(
            "_ReportParts",
            [
                ("operators", list[msgspec.Raw]),
                *((key, msgspec.Raw, msgspec.field(default_factory=msgspec.Raw))
                  for key in REPORT_KEYS if key != "operators"),
            ],
            forbid_unknown_fields=True,
        )
    )  # fmt: skip


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


def dumps_report(report: dict) -> str:
    return json.dumps(finite(report), indent=1, allow_nan=False) + "\n"


def save_report(report: dict, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write ``report`` atomically as JSON; refuses to clobber unless ``overwrite``."""
    return write_text_atomically(path, dumps_report(report), overwrite=overwrite)


def validate_report(data: object, source: str) -> dict:
    """Check the shape of a loaded report; raise ReportError naming ``source``."""
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
    return data


def _json_array(texts: list) -> bytes:
    """The JSON array of these JSON texts (bytes-like), without decoding them."""
    return b"[" + b",".join(texts) + b"]"


class PendingRows:
    """Rows of a report not decoded yet, as JSON arrays of ``ROW_BATCH`` rows, and the
    list they go to once decoded.

    Decoding all of a 100k-row report's rows takes ~0.3 s here; splitting the file into
    rows without decoding them, a fifth of that. So a reopened report shows its first
    page while the rest decode, a part at a time (:meth:`split`, :meth:`decode`). Rows
    given as texts (views of the file's bytes) are copied into parts only as the parts
    are handed out, after the first page is painted (15-40 ms for 100k rows); the file's
    bytes go with the last copy, and each part once decoded: memory holds the file and
    its rows together only briefly.
    """

    def __init__(
        self,
        parts: list[tuple[bytes, int]] | None = None,
        into: list | None = None,
        texts: list | None = None,
        size: int = ROW_BATCH,
    ):
        self._parts = parts or []
        self._texts = texts or []
        self._size = size
        self._into = into

    @classmethod
    def of_texts(cls, texts: list, into: list, size: int = ROW_BATCH) -> PendingRows:
        """From the rows' JSON texts (bytes-like), to go out in parts of ``size`` rows."""
        return cls(into=into, texts=texts, size=size)

    def __len__(self) -> int:
        return sum(rows for _, rows in self._parts) + len(self._texts)

    def _take_parts(self) -> Iterator[tuple[bytes, int]]:
        """Every part, in order, each text copied into one as it is reached; once only."""
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
        """The rows, decoded, and appended to the list they go to; once only."""
        rows = [row for text, _ in self._take_parts() for row in decode_json(text)]
        if self._into is not None:
            self._into.extend(rows)
        return rows


def _first_page(data: bytes, rows: int) -> tuple[dict, PendingRows] | None:
    """The document with only its first ``rows`` rows decoded, or None when the file
    is not an object whose operators are a list (the full decode then says what it is)."""
    try:
        try:  # one pass over the bytes when the file holds only the keys we write
            parts = _REPORT_PARTS.decode(data)
            top = {
                key: getattr(parts, key)
                for key in REPORT_KEYS
                if key == "operators" or getattr(parts, key)  # an empty Raw: no such key
            }
            texts = parts.operators
        except msgspec.ValidationError:  # other keys too, or operators not a list
            top = _TOP_LEVEL.decode(data)
            texts = _ROW_TEXTS.decode(top["operators"])
    except (ValueError, KeyError):
        return None
    document = {
        key: decode_json(_json_array(texts[:rows])) if key == "operators" else decode_json(value)
        for key, value in top.items()
    }
    return document, PendingRows.of_texts(texts[rows:], into=document["operators"])


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
        return read_bytes(source, progress)
    except FileNotFoundError:
        raise ReportError(f"{source} does not exist: check the path") from None
    except IsADirectoryError:
        raise ReportError(f"{source} is a directory, not a report file") from None
    except PermissionError:
        raise ReportError(f"{source} cannot be read: permission denied") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
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
