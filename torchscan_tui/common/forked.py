"""A call made in a forked child while this process does other work: two cores at once.

Python runs one thread at a time, so work that needs none of the caller's next results
overlaps it only in another process. A forked child starts with this process's memory as
it is (a big trace's decoded columns: shared until written, nothing pickled on the way
in), makes the call, and sends its pickled result back on a pipe.

Where a child is not worth it or cannot be had (not Linux, one core, asked not to), or
fails in any way (the call raised, the child was killed, the result would not pickle),
:meth:`Forked.result` makes the call in this process instead: its caller gets the value
or the exception an in-line call gives, with its traceback. The child never returns into
the caller's code, writes nothing to the terminal, and ends with ``os._exit`` (no
``atexit``, no Textual teardown of the terminal it shares). It dies with its parent: the
app quit while it reads a trace on a thread of its own (a daemon, not waited for) leaves
no child computing for nobody.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar, cast

T = TypeVar("T")

READ_BYTES = 1 << 20
PR_SET_PDEATHSIG = 1  # linux/prctl.h: the signal a process gets when its parent dies
# How long a child is waited for: the caller's own time on its part, several times over
# (the child's part takes less), and never under half a minute (a loaded machine).
PATIENCE_S, PATIENCE_RATIO = 30.0, 4.0


def patience(elapsed: float) -> float:
    """Seconds to wait for a child whose caller spent ``elapsed`` on its own part."""
    return max(PATIENCE_S, PATIENCE_RATIO * elapsed)


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether a forked child can run beside this process here: Linux (fork is unsafe
    with macOS's system libraries) and a second core."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and cores() >= 2


_prctl: Callable[..., int] | None = None


def _death_signal_setter() -> Callable[..., int] | None:
    """libc's ``prctl``, found in the parent before it forks (the child imports and
    loads nothing: another thread may hold a lock at the fork); None where there is
    none (a libc without it)."""
    global _prctl
    if _prctl is None:
        try:
            import ctypes

            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            return None
    return _prctl


def _die_with(parent: int, prctl: Callable[..., int] | None) -> None:
    """In the child: be killed when ``parent`` dies (Linux's parent-death signal), or
    exit now if it died before the signal was set."""
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


class Forked(Generic[T]):
    """``call`` made in a forked child (see the module) for the span of a ``with`` block;
    :meth:`result` its value.

    The child starts as the block is entered and is stopped on leaving it, however the
    block ends: a caller that fails (or is interrupted) before asking for the result
    never leaves it running. Outside a block, :meth:`result` makes the call here."""

    def __init__(self, call: Callable[[], T], fork: bool = True):
        self._call = call
        self._fork = fork
        self._pid: int | None = None
        self._pipe: int | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id until its result is taken or it is stopped; None when
        no child makes the call (:meth:`result` makes it here)."""
        return self._pid

    def __enter__(self) -> Forked[T]:
        if self._fork and can_fork():
            try:
                self._start()
            except BaseException:  # Ctrl-C, held back by _start, raised as it ends
                self.cancel()  # __exit__ is not called when __enter__ raises
                raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()

    def _start(self) -> None:
        prctl, parent = _death_signal_setter(), os.getpid()
        read, write = os.pipe()
        # No Ctrl-C from the fork until the child is recorded: a KeyboardInterrupt in
        # between would leave a child nobody knows to stop. One held back is raised as
        # the mask is restored, with the child recorded (__enter__ stops it).
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with warnings.catch_warnings():
                # Python 3.12 warns of fork in a process with threads: the child only
                # computes and exits, taking no lock another thread could hold (nothing
                # is imported, printed or logged there).
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                _die_with(parent, prctl)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                os.close(read)
                self._child(write)
            self._pid, self._pipe = pid, read
        except OSError:  # no memory or processes left for a child: in line instead
            os.close(read)
        finally:
            os.close(write)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def _child(self, write: int) -> None:
        """In the child: the call's pickled result to the pipe, then exit. Never returns."""
        code = 1
        try:
            gc.disable()  # no finalizer of the parent's objects runs here
            warnings.simplefilter("ignore")  # the terminal is the parent's
            data = pickle.dumps(self._call(), protocol=pickle.HIGHEST_PROTOCOL)
            with open(write, "wb") as pipe:
                pipe.write(data)
            code = 0
        except BaseException:  # noqa: BLE001, S110 - the parent makes the call again
            pass  # and gets the exception itself, with its traceback
        finally:
            os._exit(code)

    def result(self, timeout: float | None = None) -> T:
        """The call's value: the child's, or made here when there is none or it failed.

        ``timeout``: seconds to wait for the child, after which it is stopped and the
        call made here (a child stuck for any reason never hangs its parent)."""
        if self._pid is None or self._pipe is None:
            return self._call()
        data = self._read(self._pipe, timeout)
        if data is None:
            self.cancel()
            return self._call()
        # Reaped before it is forgotten: interrupted first, __exit__ still stops it.
        _, status = os.waitpid(self._pid, 0)
        pipe, self._pid, self._pipe = self._pipe, None, None
        os.close(pipe)
        if os.waitstatus_to_exitcode(status) == 0:
            try:
                return cast(T, pickle.loads(data))
            except Exception:  # noqa: BLE001 - a result cut short: made here instead
                pass
        return self._call()

    @staticmethod
    def _read(pipe: int, timeout: float | None) -> bytes | None:
        """All the child writes, up to its end; None when ``timeout`` passes first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        waiting = select.poll()  # not select(): any descriptor number
        waiting.register(pipe, select.POLLIN)
        chunks: list[bytes] = []
        while True:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0.0) * 1e3
            if not waiting.poll(wait):
                return None
            chunk = os.read(pipe, READ_BYTES)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def cancel(self) -> None:
        """Stop the child, if one is still running, and reap it."""
        if self._pid is None or self._pipe is None:
            return
        pid, pipe = self._pid, self._pipe
        self._pid = self._pipe = None
        os.close(pipe)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
