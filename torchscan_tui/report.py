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
from pathlib import Path

from .atomic import write_text_atomically
from .jsonio import Progress, decode_json, no_progress, read_bytes

SCHEMA_NAME = "torchscan-tui/report"
SCHEMA_VERSION = 1


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
