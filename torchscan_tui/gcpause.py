"""Pause the cyclic garbage collector around bulk work that allocates millions of objects.

Parsing a trace or grouping 100k events creates millions of small objects and no cycles;
the collector's repeated passes over them cost more than the work itself (json.load of a
37 MiB trace: 3.5 s with it, 1.4 s without). Reference counting still frees everything.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
