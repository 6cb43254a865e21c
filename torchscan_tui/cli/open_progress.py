"""Opening a profile file before the app starts, its progress on the terminal, and
Ctrl-C ending that work in one line (the app's own start, and a headless conversion's).

Apart from :mod:`~torchscan_tui.cli.headless`: the app's path to a report's or a trace's
first painted row imports this and not the headless runner, whose workload session,
comparison and run machinery were ~45 ms of that path's ~110 ms of imports of ours
(issue 31: the first paint within 1.5x of a bare Textual app's).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from torchscan_tui.cli.progress_line import ProgressLine
from torchscan_tui.common.gcpause import freeze_long_lived, gc_paused
from torchscan_tui.formats.jsonio import Progress
from torchscan_tui.formats.opening import Opened, open_profile_paged
from torchscan_tui.formats.report_pages import PendingRows


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a conversion. Not KeyboardInterrupt itself: CPython notes one that
    reaches code run by ``exec`` of a string (a dataclass or namedtuple being made, as
    a module imported mid-read defines them) and, though it is caught, ends the process
    by SIGINT on exit (status -2, not our 130)."""


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted


@contextmanager
def ctrl_c_interrupts() -> Iterator[None]:
    """For its span, Ctrl-C raises :class:`Interrupted`: a big trace's open takes
    seconds, and the command ends it in one line, not a traceback. Only around work of
    ours, never around the app (it takes Ctrl-C as a key, a SIGINT from outside its way)."""
    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        yield
    except Exception as exc:
        if _interrupted(exc):
            raise Interrupted from exc
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` wraps our :class:`Interrupted`: Python 3.11 turns an exception
    raised in a descriptor's ``__set_name__`` (a dataclass's field, while a module
    imported mid-read defines one) into a RuntimeError, the signal's raise its cause."""
    seen: set[int] = set()
    inner: BaseException | None = exc
    while inner is not None and id(inner) not in seen:
        if isinstance(inner, Interrupted):
            return True
        seen.add(id(inner))
        inner = inner.__cause__ or inner.__context__
    return False


def open_with_progress(
    path: str, first_page: int | None = None, keep_trace: bool = False
) -> Opened:
    """open_profile_paged, showing its progress on the terminal while it works.

    The profile's hundreds of thousands of objects live as long as the app, so they are
    frozen out of the cyclic collector (``gc.freeze``) before it resumes: otherwise its
    next passes, the first one at once, would walk all of them again and again (0.2 s
    each at 100k rows, and later as pauses in the UI).
    """
    if os.path.isdir(path):
        ranked = open_ranks_with_progress(path)
        if ranked is not None:
            return ranked
    with ProgressLine(os.path.basename(os.path.normpath(path))) as progress, gc_paused():
        opened = open_profile_paged(path, progress, first_page, keep_trace)
        freeze_long_lived()
        return opened


def ranks_read(progress: Progress) -> Callable[[int, int], None]:
    """``progress`` told as each rank's trace is read: "3 of 16 ranks read" (it said
    "rank 3 of", the line's share after it, which read "rank 3 of 19%")."""
    return lambda done, of: progress(f"{done} of {of} ranks read", done / of)


def open_ranks_with_progress(folder: str) -> Opened | None:
    """A directory of one trace per rank as one session (see formats/ranks.py), saying
    each rank as it is read; None when it is not one."""
    # Here, not at the top: the cross-rank analysis is a few ms of every start.
    from torchscan_tui.formats.ranks import open_rank_directory

    with ProgressLine(os.path.basename(os.path.normpath(folder))) as progress:
        opened = open_rank_directory(folder, ranks_read(progress))
    if opened is None:
        return None
    freeze_long_lived()
    report, source = opened
    return Opened(report, source, PendingRows())
