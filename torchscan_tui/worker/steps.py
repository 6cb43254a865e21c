"""A window of steps to profile: W warm-up steps left out, then N steps profiled.

A step is one ``optimizer.step()`` of any ``torch.optim`` optimizer (a global post-step
hook: the script is not edited), or one call of ``workload()``. One profiler runs from
the start, so a script in which no step is ever seen is still profiled whole; as the
W-th step ends a marker event opens the window, and as the (W+N)-th ends another closes
it (the device's queue drained first), and the rows are made of the events between them
(:func:`~torchscan_tui.analysis.profiler_events.window_events`). Inside the window, a
session that has recorded enough is read and replaced by a fresh one at a step end, so
torch never holds a big window's events at once (:mod:`.step_sessions`). Once the window is
closed, :class:`WindowComplete` is raised out of the step that closed it (out of
``optimizer.step()``, past the script's ``except Exception``), which ends the script
there: the cost of a profile is start-up plus W + N steps, not the whole job.

The profiler is never started or stopped inside a step: the hook runs within the
``Optimizer.step`` profiler range, and stopping a profiler there crashed the process at
exit (a range ended after its profiler was gone).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.analysis.profiler_events import STEP_END, STEP_START, WINDOW_END, WINDOW_START
from torchscan_tui.analysis.records import Note
from torchscan_tui.analysis.step_model import Step
from torchscan_tui.common.text import exception_line
from torchscan_tui.formats.report_schema import StepsContext
from torchscan_tui.worker.call_sites import SiteStep
from torchscan_tui.worker.device_peak import DevicePeak
from torchscan_tui.worker.optimizer_steps import on_outermost_steps
from torchscan_tui.worker.step_sessions import SessionHarvest, let_go, one_process_job
from torchscan_tui.worker.window_memory import WindowMemory

# The step after the window, traced for call sites (worker/call_sites.py), records far
# more than a step (each call into torch ranged, Python frames, memory): not taken past
# this much recording a step, and only with room for this many steps' worth.
MAX_TRACED_STEP_BYTES = 32 << 20
TRACED_STEP_COST = 4


class WindowComplete(BaseException):  # noqa: N818 - not an error: the window is in
    """Raised from the step that completes the window, to end the script there."""


class StepWindow:
    """Counts steps and moves the profiler: drop the warm-up, keep N steps, then stop.

    :attr:`profile` is the one profiler; its events between the markers are the report's
    (all of them when the warm-up never ended).
    """

    def __init__(
        self,
        warmup: int,
        steps: int,
        *,
        run_to_end: bool = False,
        source: str = "optimizer.step()",
        clock: Callable[[], float] = time.perf_counter,
        on_step: Callable[[int, int], None] = lambda done, of: None,
    ):
        if warmup < 0 or steps < 1:
            raise ValueError("a window needs warmup >= 0 and steps >= 1")
        self.warmup, self.steps = warmup, steps
        self.source = source
        self.run_to_end = run_to_end
        self._settle: Callable[[], None] = lambda: None
        self._mark: Callable[[str], None] = lambda name: None
        self.window_done = False
        self.end_at_next_step = False
        self.script_profiler: ScriptProfiler | None = None  # see ScriptProfiler
        self.adopted = False
        self._clock = clock
        self._on_step = on_step  # progress: steps done, of warm-up + profiled
        # Said as a session is read between two steps (seconds, for a big one).
        self.on_reading: Callable[[], None] = lambda: None
        self.profile: Any = None
        self.seen = 0  # steps seen, warm-up included
        self.step_seconds: list[float] = []  # each profiled step's wall time
        self.profiling = False
        self.window_started = False
        self.ended_on_thread: str | None = None  # the window ended in a step on this thread
        self.superseded = False  # the script started its own profiler: ours stopped
        # How to run what must not run inside a step's profiler range (stopping a
        # profiler there crashed the process at exit): at once, between two calls of
        # workload(); past the step's end, from an optimizer's hook (hook_optimizer_steps).
        self.defer: Callable[[Callable[[], None]], None] = lambda then: then()
        self._new_profile: Callable[[], Any] = lambda: None
        self.recorded_from_window = False  # the warm-up's profile was let go
        self.step_names: list[str] = []  # an adopted profile's: its ProfilerStep numbers
        self._last = 0.0
        self.with_flops = False  # torch's with_flops in the window's profiles
        # What the worker's memory allows: the window may end before its last step.
        self.memory = WindowMemory.from_environment()
        self.device_peak: DevicePeak | None = None  # the device allocator's (CUDA only)
        # The step after the window, traced for call sites (worker/call_sites.py).
        self.site_step: SiteStep | None = None
        self.site_step_running = False
        # Where each session of the window goes once it is read (None: one session for
        # the whole window): worker/step_sessions.py.
        self.sessions: SessionHarvest | None = None

    def start(
        self,
        new_profile: Callable[[], Any],
        settle: Callable[[], None],
        mark: Callable[[str], None],
    ) -> None:
        """Before the script or the first call: start the one profiler. ``settle`` waits
        for the device's queued work; ``mark(name)`` records a marker event."""
        self._settle, self._mark, self._new_profile = settle, mark, new_profile
        self.profile = new_profile()
        self.profile.start()
        self.profiling = True
        self.window_started = self.warmup == 0
        if self.window_started:
            self._mark(WINDOW_START)
            self.memory.window_opens()
            if self.device_peak is not None:
                self.device_peak.window_opens()
        self._last = self._clock()

    def _open_window(self) -> None:
        """The warm-up is over: a fresh profiler for the window, the warm-up's events let
        go (a long warm-up's were gigabytes), then the marker that opens the window.
        Never inside a step's profiler range (see :attr:`defer`)."""
        if not self.profiling or self.superseded:
            return  # the script's own profiler took over meanwhile
        self._settle()
        self.profile.stop()
        let_go(self.profile)  # the warm-up's events go now, before the window's come
        self.profile = self._new_profile()
        self.profile.start()
        self.recorded_from_window = True
        self._mark(WINDOW_START)
        self.memory.window_opens()
        if self.device_peak is not None:
            self.device_peak.window_opens()
        self._last = self._clock()

    def step_done(self) -> None:
        """After each step: count it, mark the window, end the script when it is in.

        Once the script has started its own profiler (:class:`ScriptProfiler`) this
        window is moot: the script runs until that profiler's first profile is in, its
        schedule however long (then it ends at its next step)."""
        self.seen += 1
        now = self._clock()
        if self.superseded:
            self._on_step(self.seen, 0)  # how far, of no count known in advance
            if self.end_at_next_step:  # the script's own profile is in
                raise WindowComplete
            return
        if not self.window_done:
            self._on_step(self.seen, self.warmup + self.steps)
        if self.window_done:
            if self.site_step_running:  # the traced step after the window is over
                self._end_site_step()
            if not self.run_to_end:  # again: the script caught it (``except BaseException``)
                raise WindowComplete
            return  # after the window, with --run-to-end
        if not self.window_started:
            if self.seen == self.warmup:  # the warm-up is over: the window opens
                self.window_started = True
                self.defer(self._open_window)
            return
        self.step_seconds.append(now - self._last)
        self._last = now
        done = len(self.step_seconds)
        self.memory.step_done()
        # Sessions, where they may be read (asked at each step: a job's group is made
        # by the script, after the window was set up)
        self.memory.per_step_sessions = self.sessions is not None and one_process_job()
        if done < self.steps and self.memory.room_for_another(done):
            self._mark(STEP_END)
            if self.sessions is not None and self.memory.session_full():
                self.defer(self._next_session)
        else:  # the last step, or the last one memory allows (WindowMemory)
            self._settle()
            self._mark(WINDOW_END)
            self.window_done = True
            if self.device_peak is not None:
                self.device_peak.window_ends()
            if self._site_step_follows():
                self.site_step_running = True
                self.defer(self._begin_site_step)
                return
            if not self.run_to_end:
                raise WindowComplete

    def _next_session(self) -> None:
        """Between two profiled steps, once a session has recorded enough
        (:meth:`WindowMemory.session_full`): it is stopped, taken (its events read, its
        trace written aside) and let go; the next step gets a fresh one, so torch holds
        one session's events at a time. Never inside a step's profiler range (see
        :attr:`defer`)."""
        if not self.profiling or self.superseded or self.sessions is None:
            return
        self.on_reading()
        self._settle()
        self.profile.stop()
        finished, self.profile = self.profile, None
        self.sessions.take(finished)
        let_go(finished)  # torch's results for the step
        self.memory.session_taken()
        self.profile = self._new_profile()
        self.profile.start()
        self._mark(STEP_START)
        self._on_step(self.seen, self.warmup + self.steps)  # profiling again
        self._last = self._clock()  # the time taken to read the step is no step's

    def _site_step_follows(self) -> bool:
        """Whether one more step runs, traced for call sites: not when memory cut the
        window, nor for op-dense steps (a traced step of 36k small ops took 2.1 GB and
        95 s more than the window itself: benchmarks/window_memory.py), nor when the
        budget leaves no room for one at several times a step's recording."""
        step = self.site_step
        if step is None:
            return False
        if self.memory.cut_after is not None:
            step.missing = "the window was cut for memory, so no step after it was traced"
            return False
        per_step = self.memory.recorded / max(len(self.step_seconds), 1)
        if per_step > MAX_TRACED_STEP_BYTES:
            step.missing = (
                f"the steps are op-dense (recording one grew the worker by "
                f"{per_step / 2**20:.0f} MiB): tracing one more for call sites would cost "
                "several times that in time and memory, so none was traced"
            )
            return False
        if not self.memory.room_for(TRACED_STEP_COST * per_step):
            step.missing = "the worker's memory budget leaves no room to trace one more step"
            return False
        return True

    def _begin_site_step(self) -> None:
        """The window's profile stops (its trace is the window's), the traced step's
        starts. Never inside a step's profiler range (see :attr:`defer`)."""
        assert self.site_step is not None
        if not self.profiling or self.superseded:
            self.site_step_running = False
            return
        self._settle()
        self.profile.stop()
        self.profiling = False
        self.site_step.begin()

    def _end_site_step(self) -> None:
        assert self.site_step is not None
        self.site_step_running = False
        self.site_step.end_step()
        if self.run_to_end:  # the script runs on: the traced step's profile stops now
            self.defer(self.site_step.stop)

    def stop(self) -> None:
        """Stop the profiler (after the script, outside any step)."""
        if self.site_step is not None:
            step = self.site_step
            if self.site_step_running and not step.completed and step.missing is None:
                step.missing = "the run ended before the step after the window did"
            self.site_step_running = False
            self.site_step.stop()
        if self.profiling:
            self._settle()
            if self.device_peak is not None:  # a window the script ended (or the whole call)
                self.device_peak.window_ends()
            self.profile.stop()
            self.profiling = False

    def stop_marking(self) -> None:
        self._mark = lambda name: None
        self._settle = lambda: None

    def time_steps(self, steps: Sequence[Step]) -> None:
        """Each profiled step's wall time from the profile's own steps (marker to marker,
        to the end of its device work: :mod:`~torchscan_tui.analysis.step_model`), so the
        header, the text and the step overview give one timing. Kept as clocked here when
        the profile does not hold one step per step timed."""
        if len(steps) == len(self.step_seconds):
            self.step_seconds = [step.seconds for step in steps]

    def adopt(self, steps: Sequence[Step]) -> None:
        """The report is the script's own profile (:class:`ScriptProfiler`): its steps
        (their ``ProfilerStep`` host ranges)."""
        self.adopted = True
        self.window_started = True
        self.source = "the script's own torch.profiler (prof.step())"
        self.warmup = 0
        self.steps = max(len(steps), 1)
        self.step_seconds = [step.seconds for step in steps]
        self.step_names = [step.name for step in steps]

    def never_recorded(self) -> None:
        """The script's own profiler started but kept no profile (its schedule never
        reached an active step): the report holds what ran before it started, not steps."""
        self.window_started = False
        self.step_seconds = []

    def context(self) -> dict[str, StepsContext]:
        """What the report says of the steps: how many, which, each one's wall time."""
        return {
            "steps": {
                "source": self.source,
                "warmup": self.warmup,
                "requested": self.steps,
                "seen": self.seen,
                "profiled": len(self.step_seconds) if self.window_started else 0,
                "whole_run": not self.window_started,
                "step_seconds": list(self.step_seconds),
                **({"profiler_steps": list(self.step_names)} if self.step_names else {}),
                **({"memory": self.memory.figures()} if self.window_started else {}),
            }
        }

    def notes(self, raised: BaseException | None = None) -> list[Note]:
        """Why the profile is not the window asked for, when it is not (``raised``: what
        the workload raised, if it did)."""
        cut = self.memory.note(self.steps) if not self.superseded else None
        return ([cut] if cut is not None else []) + self._window_notes(raised)

    def _window_notes(self, raised: BaseException | None) -> list[Note]:
        if self.ended_on_thread is not None:
            return [
                diag.make(
                    "steps_on_another_thread",
                    f"The optimizer steps on the thread {self.ended_on_thread!r}, not the "
                    "script's main thread: the window ended there and the script was ended "
                    "from its main thread. torch.profiler records only the thread that "
                    "started it (and autograd's), so that thread's ops are missing from "
                    "the rows: run the training loop on the main thread to see them.",
                )
            ]
        if self.superseded and not self.adopted:
            return [
                diag.make(
                    "script_profiler_never_recorded",
                    f"The script started its own torch.profiler, whose schedule never "
                    f"reached an active step in the {self.seen} step(s) the script ran: it "
                    "recorded nothing. The rows are what ran before it started (model set-up, "
                    "not training steps). Shorten its schedule's wait and warm-up, or remove "
                    "the script's profiler and use --steps.",
                )
            ]
        if self.adopted:
            return [
                diag.make(
                    "script_profiler_adopted",
                    "The script runs its own torch.profiler: its window (schedule and "
                    "prof.step()) is this profile, with record_shapes and profile_memory "
                    "turned on for it; --warmup and --steps do not apply.",
                )
            ]
        if not self.window_started:
            if self.seen == 0 and raised is not None:
                what = exception_line(raised)
                return [
                    diag.make(
                        "raised_before_first_step",
                        f"The workload raised before its first step ({what}): the rows "
                        "are what ran until then, not a training step. Its traceback is in "
                        "the log (l).",
                    )
                ]
            if self.seen == 0:
                return [
                    diag.make(
                        "no_steps_seen",
                        f"No step was seen ({self.source}), so the whole run is profiled. "
                        "For a window of steps, train with a torch.optim optimizer, or "
                        "define workload() for one step and run it with --steps N.",
                    )
                ]
            return [
                diag.make(
                    "window_not_reached",
                    f"The run ended after {self.seen} step(s), before the {self.warmup} "
                    "warm-up step(s) were over: the whole run is profiled. Lower --warmup.",
                )
            ]
        if len(self.step_seconds) < self.steps:
            return [
                diag.make(
                    "window_cut_short",
                    f"The run ended after {len(self.step_seconds)} of the {self.steps} "
                    "profiled step(s) asked for: the rows cover those.",
                )
            ]
        return []


# A signal no script uses, to end the window from a step taken on another thread.
WINDOW_SIGNAL = getattr(signal, "SIGRTMIN", signal.SIGUSR2) + 7


def hook_optimizer_steps(window: StepWindow) -> Callable[[], None]:
    """Count every outermost ``optimizer.step()`` of any torch.optim optimizer (see
    ``optimizer_steps``); returns the undo. Called on the main thread.

    The window ends by raising :class:`WindowComplete` out of the step that completes
    it, on the script's main thread. When that step ran on another thread (a trainer
    whose consumer thread steps), raising there would end only that thread and leave
    the script waiting for it: instead the main thread is sent :data:`WINDOW_SIGNAL`,
    whose handler raises there (a wait on a lock or a join is interrupted by it), and
    the stepping thread waits where it is, inside its step, until the worker exits.
    """
    main = threading.main_thread()
    window.defer = after_this_step

    def raise_in_main(signum: int, frame: object) -> None:
        raise WindowComplete

    previous = signal.signal(WINDOW_SIGNAL, raise_in_main)

    def after_step() -> None:
        try:
            window.step_done()
        except WindowComplete:
            if threading.current_thread() is main:
                raise
            window.ended_on_thread = threading.current_thread().name
            signal.pthread_kill(main.ident or 0, WINDOW_SIGNAL)
            threading.Event().wait()  # never set: the worker exits around this thread

    undo = on_outermost_steps(after_step)

    def undo_all() -> None:
        undo()
        signal.signal(WINDOW_SIGNAL, previous)

    return undo_all


OPTIMIZER_SOURCE = os.path.join("torch", "optim", "optimizer.py")


def after_this_step(then: Callable[[], None]) -> None:
    """Run ``then`` once the optimizer step this thread is in has returned: its profiler
    range (``Optimizer.step#...``, opened by torch's step wrapper) is closed by then. A
    profile function on this thread alone watches for the outermost wrapper's return;
    outside any step, ``then`` runs at once."""
    frame: FrameType | None = sys._getframe(1)
    wrapper = None
    while frame is not None:
        code = frame.f_code
        if code.co_name == "wrapper" and code.co_filename.endswith(OPTIMIZER_SOURCE):
            wrapper = frame
        frame = frame.f_back
    if wrapper is None:
        then()
        return
    previous = sys.getprofile()

    def watch(frame: object, event: str, arg: object) -> None:
        if event == "return" and frame is wrapper:
            sys.setprofile(previous)
            then()

    sys.setprofile(watch)


def call_steps(fn: Callable[[], Any], window: StepWindow) -> Callable[[], None]:
    """``fn`` called once per step, W + N times (``workload()`` as a step)."""

    def run() -> None:
        traced = 1 if window.site_step is not None else 0  # the step after, for call sites
        for _ in range(window.warmup + window.steps + traced):
            fn()
            window.step_done()

    return run


class ScriptProfiler:
    """A script's own ``torch.profiler.profile``, adopted rather than nested.

    Kineto runs one profiler at a time: a script that profiles itself (with a
    ``schedule`` and ``prof.step()``, or a plain ``with profile():``) under ours got no
    events, and neither did we. While the script runs, ``torch.profiler.profile`` is a
    subclass that records shapes and memory (the rows need them), stops our profiler
    when the script starts its own, and keeps the events of the script's first completed
    profile (its first ``on_trace_ready``, or its stop): that window is the report's. The
    script's own trace handler still runs. Installed before the script is loaded, as it
    may import ``profile`` by name at its top. The script then ends at its next optimizer
    step (never inside the script's profiler), unless ``--run-to-end``.
    """

    def __init__(self) -> None:
        self.window = StepWindow(0, 1)  # replaced by attach() before anything runs
        self.extract: Callable[[Any], list] = lambda profiler: []
        self.events: list | None = None  # the adopted profile's events, once captured
        self.profile: Any = None  # the script's profiler whose events those are
        self.started = False

    def attach(self, window: StepWindow) -> None:
        """The window whose profiler stops when the script starts its own."""
        self.window = window
        window.script_profiler = self

    def install(self) -> Callable[[], None]:
        """Adopt from now on (before the script is loaded: it may import ``profile``
        by name); returns the undo."""
        import torch.profiler
        import torch.profiler.profiler as module

        original = module.profile
        adopter = self

        class AdoptedProfile(original):  # type: ignore[misc, valid-type]
            adopted_from = original  # what profile_workload itself uses

            def __init__(self, *args: Any, **kwargs: Any):
                kwargs["record_shapes"] = True
                kwargs["profile_memory"] = True
                kwargs["with_flops"] = kwargs.get("with_flops") or adopter.window.with_flops
                theirs = kwargs.get("on_trace_ready")

                def ready(profiler: Any) -> None:
                    adopter._capture(profiler)
                    if theirs is not None:
                        theirs(profiler)

                kwargs["on_trace_ready"] = ready
                super().__init__(*args, **kwargs)

            def start(self) -> None:
                adopter._script_starts()
                super().start()

            def stop(self) -> None:
                super().stop()
                adopter._capture(self)

        setattr(torch.profiler, "profile", AdoptedProfile)  # noqa: B010 - a module's class
        setattr(module, "profile", AdoptedProfile)  # noqa: B010

        def undo() -> None:
            setattr(torch.profiler, "profile", original)  # noqa: B010
            setattr(module, "profile", original)  # noqa: B010

        return undo

    def _script_starts(self) -> None:
        if not self.started:
            self.started = True
            self.window.stop()  # ours stops: the script's profiler is the one that runs
            self.window.stop_marking()  # and no marker of ours lands in its events
            self.window.superseded = True

    def _capture(self, profiler: Any) -> None:
        if self.events is not None or getattr(profiler, "profiler", None) is None:
            return
        try:
            self.events = self.extract(profiler.profiler.kineto_results)
        except (AttributeError, RuntimeError):  # no results (a cycle that saved nothing)
            return
        self.profile = profiler
        self.window.window_done = True  # our step hook ends the script at its next step
        self.window.end_at_next_step = not self.window.run_to_end
