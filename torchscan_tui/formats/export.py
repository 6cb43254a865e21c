"""Export rows (CSV, JSON, Markdown) and traces, atomically (no torch, no textual).

The format follows the file extension. Cells are made safe for where they end up: CSV
cells that a spreadsheet would run as a formula are neutralised, Markdown escapes ``|``
and newlines, JSON never holds NaN or Infinity.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from torchscan_tui.analysis.fields import EXPORT_COLUMNS, FIELDS
from torchscan_tui.common.formatting import format_bytes, format_seconds, format_shapes
from torchscan_tui.formats.atomic import (
    ExportError,
    check_destination,
    write_text_atomically,
)
from torchscan_tui.formats.report import finite

COLUMNS = EXPORT_COLUMNS
FORMATS = {".csv": "csv", ".json": "json", ".md": "markdown", ".markdown": "markdown"}
TRACE_PRIVACY_NOTE = (
    "A trace holds the host name, file paths, process and thread ids, and every input shape."
)


def format_for(path: str | os.PathLike) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ExportError(
            f"{path}: unknown format {suffix or '(no extension)'}; use .csv, .json or .md"
        )
    return FORMATS[suffix]


def _cell(row: Mapping[str, Any], column: str) -> object:
    value = row.get(column)
    if column == "input_shapes":
        return format_shapes(value or [])
    if column == "sites":  # a list of sites: one cell as the detail pane words it
        return FIELDS["sites"].text(value) if value else ""
    return "" if value is None else value


def _neutralise_formula(value: object) -> object:
    """A CSV cell starting with = + - @ (or tab/CR) would run as a spreadsheet formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def rows_to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] = COLUMNS) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_neutralise_formula(_cell(row, column)) for column in columns])
    return buffer.getvalue()


def rows_to_json(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] = COLUMNS) -> str:
    """JSON keeps every field of each row (``columns`` only shapes CSV and Markdown), a
    row per line as saved reports hold them: compact, greppable, diffable."""
    if not rows:
        return "[]\n"
    # finite gives a row's compact call sites and spread as the dicts they stand for
    lines = ",\n ".join(json.dumps(finite(row), allow_nan=False) for row in rows)
    return f"[\n {lines}\n]\n"


def _markdown_cell(value: object) -> str:
    text = str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _readable(row: Mapping[str, Any], column: str) -> object:
    """A Markdown cell in the screen's units (ms, MiB): Markdown is read, not parsed;
    CSV and JSON keep the raw SI numbers for tools."""
    field = FIELDS.get(column)
    unit = field.unit if field is not None else column.rpartition("_")[2]  # a kernel's
    if unit == "seconds":
        return format_seconds(row.get(column))
    if unit == "bytes":
        return format_bytes(row.get(column), signed=True)
    return _cell(row, column)


def rows_to_markdown(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] = COLUMNS) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for column in columns:
            value = _readable(row, column)
            cells.append(_markdown_cell("—" if value == "" else value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


RENDERERS = {"csv": rows_to_csv, "json": rows_to_json, "markdown": rows_to_markdown}


def export_rows(
    rows: Sequence[Mapping[str, Any]],
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    columns: Sequence[str] = COLUMNS,
) -> Path:
    """Write ``rows`` to ``path`` in the format its extension names; return the path."""
    renderer = RENDERERS[format_for(path)]
    check_destination(path, overwrite=overwrite)
    return write_text_atomically(path, renderer(rows, columns), overwrite=overwrite)
