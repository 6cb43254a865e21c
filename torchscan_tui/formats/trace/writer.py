"""A Chrome trace written from raw events, for when torch's own export is unusable.

``export_chrome_trace`` builds JSON by hand; operator or annotation names holding ``"`` or
control characters have made it invalid JSON in some torch versions. This writer takes
the same events (:class:`~torchscan_tui.analysis.aggregate.RawEvent`) and lets ``json`` escape
everything, so Perfetto and chrome://tracing can always open the file. Pure: no torch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from torchscan_tui.analysis.profiler_events import RawEvent

FALLBACK_NOTE = "written by torchscan-tui's fallback writer (torch's export was not valid JSON)"


def chrome_trace(events: Sequence[RawEvent], trace_start_ns: int = 0) -> dict:
    """Complete ("X") events on one process, one track per thread or device stream."""
    start = trace_start_ns or min((event.start_ns for event in events), default=0)
    trace_events = []
    for event in events:
        if event.name == "[memory]":
            continue
        entry = {
            "ph": "X",
            "cat": event.activity_type or "cpu_op",
            "name": event.name,
            "pid": 0 if event.device_type == "CPU" else 1,
            "tid": event.thread,
            "ts": (event.start_ns - start) / 1000,
            "dur": max(event.end_ns - event.start_ns, 0) / 1000,
            "args": {"Input Dims": event.shapes, "correlation": event.correlation_id},
        }
        trace_events.append(entry)
    return {
        "traceEvents": trace_events,
        "displayTimeUnit": "ms",
        "otherData": {"note": FALLBACK_NOTE},
    }


def dumps_chrome_trace(events: Sequence[RawEvent], trace_start_ns: int = 0) -> str:
    return json.dumps(chrome_trace(events, trace_start_ns), allow_nan=False)
