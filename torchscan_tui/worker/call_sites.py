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
rows come from too. The same step opens a range around each ``nn.Module``'s forward
(global forward hooks, that step only), for the module tree (:mod:`~torchscan_tui.
analysis.modules`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from itertools import compress
from types import CodeType, FrameType
from typing import Any, NamedTuple

from torchscan_tui.analysis.aggregate import aggregate_events
from torchscan_tui.analysis.modules import (
    MODULE_MARK,
    SOURCE_SEPARATOR,
    module_calls,
    module_label,
    module_paths,
    module_sources,
)
from torchscan_tui.analysis.profiler_events import EventColumns, kept_event
from torchscan_tui.analysis.records import MemoryCategories
from torchscan_tui.analysis.sites import (
    SITE_MARK,
    SiteTable,
    marked_sites,
    nested_sites,
    site_table,
    users_file,
)
from torchscan_tui.worker.memory_categories import memory_categories

_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # torchscan_tui/


def _is_users(code: CodeType, known: dict[CodeType, bool]) -> bool:
    """Whether ``code`` is in the user's files: not torch's, an installed package's,
    the library's, a built-in, or this program's."""
    users = known.get(code)
    if users is None:
        filename = code.co_filename
        users = known[code] = users_file(filename) and not filename.startswith(_OURS)
    return users


def _ranged() -> Any:
    """torch's cheapest named range (``_RecordFunctionFast``, else ``record_function``)."""
    import torch

    fast = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None)
    return fast if fast is not None else torch.autograd.profiler.record_function


def _frame_name(code: CodeType, line: int) -> str:
    """``/…/model.py(12): forward``, as torch's ``Call stack`` names a frame (sys.path's
    ``a/../b`` as ``b``; a file name's bytes that are not UTF-8 as ``\\xe9``, so the
    report and the profiler's own strings stay UTF-8)."""
    return f"{_path_text(code.co_filename)}({line}): {code.co_name}"


def _path_text(filename: str) -> str:
    path = os.path.normpath(filename)
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _stack_key(
    frame: FrameType | None, known: dict[CodeType, bool]
) -> tuple[tuple[CodeType, int], ...] | None:
    """The stack of a call into torch, innermost first: the library's frames inside the
    user's innermost one, that one, and the user's frames outside it (the library's
    between them and ours at the bottom left out). None when no frame is the user's."""
    inner: list[tuple[CodeType, int]] = []
    while frame is not None and not _is_users(frame.f_code, known):
        if frame.f_code.co_filename.startswith(_OURS):
            return None  # our own call (a marker), under no frame of the user's
        inner.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    if frame is None:
        return None
    stack = [*inner, (frame.f_code, frame.f_lineno)]
    frame = frame.f_back
    while frame is not None and not frame.f_code.co_filename.startswith(_OURS):
        if _is_users(frame.f_code, known):
            stack.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    return tuple(stack)


def _site_mode() -> Any:
    """A ``TorchFunctionMode`` naming each call into torch by its call site."""
    from torch.overrides import TorchFunctionMode

    ranged = _ranged()
    known: dict[CodeType, bool] = {}
    names: dict[tuple[tuple[CodeType, int], ...], str] = {}

    class CallSites(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            key = _stack_key(sys._getframe(1), known)
            if key is None:  # torch called by torch or by us: no site of the user's
                return func(*args, **kwargs)
            name = names.get(key)
            if name is None:
                name = names[key] = SITE_MARK + ";".join(_frame_name(*frame) for frame in key)
            with ranged(name):  # the mode is off inside: nested calls are not wrapped
                return func(*args, **kwargs)

    return CallSites()


def _forward_site(module_class: type, known: dict[CodeType, bool]) -> str | None:
    """A module class's forward as a site, when it is in the user's files."""
    code = getattr(getattr(module_class, "forward", None), "__code__", None)
    if not isinstance(code, CodeType) or not _is_users(code, known):
        return None
    return _frame_name(code, code.co_firstlineno)


def _module_hooks() -> Callable[[], None]:
    """A range around every module's forward, named by its attribute in its parent and
    its class (``qkv: Linear``; the outermost by its class), with its forward's site when
    that is the user's; returns the undo."""
    from torch.nn.modules import module as nn_module

    ranged = _ranged()
    local = threading.local()
    labels: dict[tuple[int, int], str] = {}
    known: dict[CodeType, bool] = {}

    def label_of(parent: Any, module: Any) -> str:
        key = (id(parent), id(module))
        label = labels.get(key)
        if label is None:
            attribute = next(
                (
                    name
                    for name, child in getattr(parent, "_modules", {}).items()
                    if child is module
                ),
                None,
            )
            kind = type(module).__name__
            label = f"{attribute}: {kind}" if attribute is not None else kind
            where = _forward_site(type(module), known)
            if where is not None:
                label += SOURCE_SEPARATOR + where
            labels[key] = label
        return label

    def before(module: Any, args: Any) -> None:
        stack = local.__dict__.setdefault("stack", [])
        parent = stack[-1][0] if stack else None
        opened = ranged(MODULE_MARK + label_of(parent, module))
        opened.__enter__()
        stack.append((module, opened))

    def after(module: Any, args: Any, output: Any) -> None:
        stack = local.__dict__.get("stack") or []
        if stack and stack[-1][0] is module:
            stack.pop()[1].__exit__(None, None, None)

    handles = [nn_module.register_module_forward_pre_hook(before)]
    try:  # run even when the forward raises (torch >= 2.0)
        handles.append(nn_module.register_module_forward_hook(after, always_call=True))
    except TypeError:
        handles.append(nn_module.register_module_forward_hook(after))

    def undo() -> None:
        for handle in handles:
            handle.remove()

    return undo


def _python_tracer_safe() -> bool:
    """Whether torch's Python tracer (``with_stack``) can run here: it raised "error
    unpacking string as utf-8" out of every call of a function whose file's name is not
    UTF-8 (``caf\\xe9.py``). Without it the memory categories lack optimizer state."""
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str):
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


class StepTables(NamedTuple):
    """What the traced step gives the report: call sites and module ranges."""

    sites: SiteTable
    modules: SiteTable
    module_calls: dict[str, int]
    module_sources: dict[str, str]
    memory_categories: MemoryCategories | None


class SiteStep:
    """The traced step: started and ended by the step window (``worker/steps.py``) on
    the thread that steps, never inside a step's profiler range."""

    def __init__(self) -> None:
        self.profile: Any = None
        self._mode: Any = None
        self._unhook: Callable[[], None] | None = None
        self.completed = False  # a whole step ran traced
        self.seconds: float | None = None  # its wall time, tracing and all
        self._began = 0.0
        self.missing: str | None = None  # why there are no call sites, when there are none

    def begin(self) -> None:
        """A CPU profile of its own, and the mode on this thread."""
        from torch.profiler import ProfilerActivity, profile

        # Memory and stacks for torch's memory profiler (worker/memory_categories.py):
        # this step's times are never the rows'.
        self.profile = getattr(profile, "adopted_from", profile)(
            activities=[ProfilerActivity.CPU],
            record_shapes=True,
            profile_memory=True,
            with_stack=_python_tracer_safe(),
        )
        self.profile.start()
        self._unhook = _module_hooks()
        self._mode = _site_mode()
        self._mode.__enter__()
        self._began = time.perf_counter()

    def end_step(self) -> None:
        """The traced step is over: the mode off (the profile stops outside the step)."""
        self.seconds = time.perf_counter() - self._began
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
        if self._unhook is not None:
            unhook, self._unhook = self._unhook, None
            unhook()
        if self._mode is not None:
            mode, self._mode = self._mode, None
            try:
                mode.__exit__(None, None, None)
            except (AssertionError, RuntimeError, IndexError):  # the script pushed one of its own
                self.missing = "the script changed torch's function modes during the traced step"

    def tables(self) -> StepTables:
        """(operator, shapes) -> self time by call site, and by module, in the traced
        step; each module's calls and source."""
        if self.profile is None or not self.completed:
            return StepTables({}, {}, {}, {}, None)
        from torchscan_tui.worker.profiling import extract_raw_events

        results = self.profile.profiler.kineto_results
        # The Python tracer's own events are not ops (and their names, started
        # mid-script, were not always UTF-8): left out before a name is read.
        events = [event for event in results.events() if not event.is_python_function()]
        raw = extract_raw_events(_Events(events), device_activity=False)
        numbers = [event.sequence_nr() for event in events]
        backward = [event.fwd_thread_id() > 0 for event in events]
        threads = [event.thread for event in raw]
        starts = [event.start_ns for event in raw]
        ends = [event.end_ns for event in raw]
        labels = [module_label(event.name) for event in raw]
        paths = module_paths(labels, threads, starts, ends)
        columns = EventColumns.from_events(raw)  # grouped as the window's are
        kept = list(map(kept_event, raw))

        def by(ranges: list[str | None]) -> SiteTable:
            """The step's groups, each event's site its innermost of ``ranges``."""
            sites = nested_sites(ranges, threads, starts, ends, numbers, backward)
            with_sites = replace(columns, sites=list(compress(sites, kept)))
            return site_table(aggregate_events(with_sites).groups)

        return StepTables(
            by(marked_sites(event.name for event in raw)),
            by(paths),
            module_calls(paths),
            module_sources(labels, paths),
            memory_categories(results),
        )


class _Events(NamedTuple):
    """Kineto results holding only ``events`` (what :func:`extract_raw_events` reads)."""

    kept: list

    def events(self) -> list:
        return self.kept
