"""One step after the window, traced for call sites: where in the user's code each op ran.

torch's ``with_stack`` moved the window's CPU self times by 27%, and its Python tracer,
started mid-script, named a frame by its function's first line (a frame already running
by its line when tracing began), sometimes in bytes that are not UTF-8
(docs/performance.md). So the window is recorded without stacks, and the step after it
runs under a profiler of its own with a ``TorchFunctionMode`` that wraps each Python call
into torch in a range named by the innermost frame in the user's files at that moment:
the line that is running, read from the frame itself. The window's trace and rows never
see that step; its ops give each row the shares of its self time by call site
(:func:`~torchscan_tui.analysis.sites.attach_step_sites`).

The mode is thread-local: it traces the thread that takes the steps, where the window's
rows come from too.
"""

from __future__ import annotations

import os
import sys
from types import CodeType
from typing import Any

from torchscan_tui.analysis.aggregate import aggregate_events
from torchscan_tui.analysis.profiler_events import EventColumns, kept_event
from torchscan_tui.analysis.sites import (
    SITE_MARK,
    SiteTable,
    marked_sites,
    nested_sites,
    site_table,
    users_file,
)

_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # torchscan_tui/


def _is_users(code: CodeType, known: dict[CodeType, bool]) -> bool:
    """Whether ``code`` is in the user's files: not torch's, an installed package's,
    the library's, a built-in, or this program's."""
    users = known.get(code)
    if users is None:
        filename = code.co_filename
        users = known[code] = users_file(filename) and not filename.startswith(_OURS)
    return users


def _site_mode() -> Any:
    """A ``TorchFunctionMode`` naming each call into torch by its call site."""
    import torch
    from torch.overrides import TorchFunctionMode

    fast = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None)
    ranged = fast if fast is not None else torch.autograd.profiler.record_function
    known: dict[CodeType, bool] = {}
    names: dict[tuple[CodeType, int], str] = {}

    class CallSites(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            frame = sys._getframe(1)
            while frame is not None and not _is_users(frame.f_code, known):
                frame = frame.f_back
            if frame is None:  # torch called by torch or by us: no site of the user's
                return func(*args, **kwargs)
            code, line = frame.f_code, frame.f_lineno
            name = names.get((code, line))
            if name is None:
                filename = os.path.normpath(code.co_filename)  # sys.path's "a/../b" as "b"
                name = names[(code, line)] = f"{SITE_MARK}{filename}({line}): {code.co_name}"
            with ranged(name):  # the mode is off inside: nested calls are not wrapped
                return func(*args, **kwargs)

    return CallSites()


class SiteStep:
    """The traced step: started and ended by the step window (``worker/steps.py``) on
    the thread that steps, never inside a step's profiler range."""

    def __init__(self) -> None:
        self.profile: Any = None
        self._mode: Any = None
        self.completed = False  # a whole step ran traced
        self.missing: str | None = None  # why there are no call sites, when there are none

    def begin(self) -> None:
        """A CPU profile of its own, and the mode on this thread."""
        from torch.profiler import ProfilerActivity, profile

        self.profile = getattr(profile, "adopted_from", profile)(
            activities=[ProfilerActivity.CPU], record_shapes=True
        )
        self.profile.start()
        self._mode = _site_mode()
        self._mode.__enter__()

    def end_step(self) -> None:
        """The traced step is over: the mode off (the profile stops outside the step)."""
        self._leave_mode()
        self.completed = True

    def stop(self) -> None:
        """The mode off and the profile stopped, whatever happened."""
        self._leave_mode()
        if self.profile is not None and getattr(self.profile, "profiler", None) is not None:
            try:
                self.profile.stop()
            except RuntimeError:  # already stopped
                pass

    def _leave_mode(self) -> None:
        if self._mode is not None:
            mode, self._mode = self._mode, None
            try:
                mode.__exit__(None, None, None)
            except (AssertionError, RuntimeError, IndexError):  # the script pushed one of its own
                self.missing = "the script changed torch's function modes during the traced step"

    def table(self) -> SiteTable:
        """(operator, shapes) -> self time by call site in the traced step."""
        if self.profile is None or not self.completed:
            return {}
        results = self.profile.profiler.kineto_results
        from torchscan_tui.worker.profiling import extract_raw_events

        events = list(results.events())
        raw = extract_raw_events(results, device_activity=False)
        numbers = [event.sequence_nr() for event in events]
        backward = [event.fwd_thread_id() > 0 for event in events]
        sites = nested_sites(marked_sites(e.name for e in raw), [e.thread for e in raw],
                           [e.start_ns for e in raw], [e.end_ns for e in raw],
                           numbers, backward)  # fmt: skip
        columns = EventColumns.from_events(raw)
        columns.sites = [site for event, site in zip(raw, sites, strict=True) if kept_event(event)]
        return site_table(aggregate_events(columns).groups)
