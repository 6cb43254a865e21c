"""A profile's Chrome trace written where the user asked, checked before it replaces
anything there (the worker side: the profiler object is torch's).

``export_chrome_trace`` can fail without raising (one ERROR line and no file) and has
written files that are no JSON, so torch writes into a private directory beside the
destination, the file is checked, and only then moved over the destination. A file
that is no JSON is mended in the least lossy way that makes it JSON:

- bytes that are not UTF-8 in some names (torch 2.13's Python tracer names frames of its
  own threads so now and then, ``with_stack``): those bytes are written as U+FFFD and
  everything else torch wrote is kept;
- anything else (names with quotes or control characters in some torch versions): the
  trace is written again from the raw events by our own writer, which escapes
  everything but keeps only what the raw events hold.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from torchscan_tui.analysis.profiler_events import RawEvent
from torchscan_tui.formats.jsonio import is_json, utf8_replaced
from torchscan_tui.formats.trace.writer import dumps_chrome_trace
from torchscan_tui.run.private_dir import PrivateDir

STAGING_PREFIX = ".torchscan-trace-"  # an export checked before it replaces the user's file

Mended = Literal["bytes_replaced", "rewritten"]
"""How a trace torch wrote was made JSON (see the module); None where it was already."""


def export_trace_atomically(
    profiler: Any,
    trace_path: str | os.PathLike,
    raw_events: list[RawEvent] | Callable[[], list[RawEvent]] | None = None,
) -> tuple[Path, Mended | None]:
    """Write the Chrome trace via a private directory, check it parses, then move it.

    ``raw_events``: the events our writer writes the trace from where torch's file is
    no JSON for another reason than its bytes (them, or what gives them when needed).
    Returns the path and how torch's file was mended, if it was.
    """
    destination = Path(trace_path)
    parent = destination.parent if str(destination.parent) else Path(".")
    private_dir = PrivateDir(parent, prefix=STAGING_PREFIX)  # swept if we are killed
    try:
        staged = Path(private_dir.path) / "trace.json"
        profiler.export_chrome_trace(str(staged))
        mended = _mended(staged, destination, raw_events)
        os.chmod(staged, 0o600)
        with open(staged, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(staged, destination)
    finally:
        private_dir.remove()
    return destination, mended


def _mended(
    staged: Path,
    destination: Path,
    raw_events: list[RawEvent] | Callable[[], list[RawEvent]] | None,
) -> Mended | None:
    """Make the file torch wrote at ``staged`` JSON, if it is not (see the module)."""
    data = staged.read_bytes() if staged.exists() else None
    if data is not None and is_json(data):
        return None
    repaired = utf8_replaced(data) if data is not None else None
    del data
    if repaired is not None and is_json(repaired):
        staged.write_bytes(repaired)
        return "bytes_replaced"
    # torch wrote nothing (a full disk, say: it does not raise) or no JSON (odd names):
    # our own writer says which, as an OSError (ENOSPC) if it fails too.
    if raw_events is None:
        raise ValueError(f"torch.profiler wrote no valid trace for {destination}")
    events = raw_events() if callable(raw_events) else raw_events
    staged.write_text(dumps_chrome_trace(events), encoding="utf-8")
    return "rewritten"
