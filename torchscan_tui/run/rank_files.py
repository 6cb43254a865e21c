"""The names of a torchrun job's per-rank files in the run's private folder (no imports:
the peak pass's ranks import this before the script runs, and must not weigh more).

Each rank of the profile pass writes ``rank-R.local-L.channel`` (its global ``RANK``, the
label users see, and its ``LOCAL_RANK``); each rank of the peak pass writes
``local-L.rss``. The RSS file goes by local rank because a c10d rendezvous hands out
global ranks in order of arrival: across nodes, a process's global rank may differ from
one pass to the next, while its place on its node does not.
"""

from __future__ import annotations

import re

CHANNEL_NAME = re.compile(r"^rank-(\d+)\.local-(\d+)\.channel$")


def channel_name(rank: int, local_rank: int) -> str:
    return f"rank-{rank}.local-{local_rank}.channel"


def rss_name(local_rank: int) -> str:
    return f"local-{local_rank}.rss"
