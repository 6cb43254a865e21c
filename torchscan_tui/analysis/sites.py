"""Where in the user's code: each operator's call sites and the by-line view (pure).

A profile recorded with ``with_stack`` gives each op its Python stack; in a trace before
Kineto's Python events that is the ``Call stack`` argument, innermost frame first:
``/…/site-packages/torch/nn/modules/linear.py(114): forward;train.py(54): <module>``.
An op's *call site* is the innermost frame in the user's files: the first that is not
in an installed package (``site-packages``, ``dist-packages``), the Python library or
built in. Grouping adds each op's self time to its row's sites (``Row.sites``); the
by-line view sums the sites over every row, as py-spy's and Scalene's by-line tables do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from torchscan_tui.analysis.records import LineRow, SiteRow

SITE = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<function>.*)$")
# Frames that are not the user's: installed packages, the standard library, built-ins.
_NOT_THE_USERS = re.compile(
    r"(site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python\d[\d.]*[/\\]|^<|^\w+\.pyx?\(0\)"
)
MAX_SITES = 20  # a row lists its 20 largest sites; the rest are summed as one


def user_frame(stack: str) -> str | None:
    """The innermost frame of ``stack`` (``;``-separated, innermost first) in the user's
    files; None when every frame is torch's or the library's."""
    for frame in stack.split(";"):
        frame = frame.strip()
        if frame and SITE.match(frame) and not _NOT_THE_USERS.search(frame):
            return frame
    return None


def call_sites(stacks: Sequence[object]) -> list[str | None]:
    """Each event's call site from its stack (None: no stack, or none of the user's);
    an empty list when no event has a stack, so grouping skips the column. Stacks repeat
    (a loop's ops share theirs): each distinct one is read once."""
    if not any(stacks):
        return []
    found: dict[str, str | None] = {}
    sites: list[str | None] = []
    for stack in stacks:
        if not isinstance(stack, str) or not stack:
            sites.append(None)
            continue
        site = found.get(stack, "")
        if site == "":
            site = found[stack] = user_frame(stack)
        sites.append(site)
    return sites


def parse_site(site: str) -> tuple[str, int, str] | None:
    """``("train.py", 54, "<module>")`` from ``train.py(54): <module>``."""
    found = SITE.match(site)
    if found is None:
        return None
    return found["file"], int(found["line"]), found["function"]


def site_rows(self_ns: Mapping[str, int], row_self_ns: int) -> list[SiteRow]:
    """A row's sites, largest first, each with its CPU self time and its share of the
    row's; past :data:`MAX_SITES`, the rest as one ``(other sites)``."""
    ordered = sorted(self_ns.items(), key=lambda item: -item[1])
    kept, rest = ordered[:MAX_SITES], ordered[MAX_SITES:]
    if rest:
        kept.append(("(other sites)", sum(ns for _, ns in rest)))
    return [
        {
            "site": site,
            "cpu_self_seconds": ns / 1e9,
            "share": ns / row_self_ns if row_self_ns > 0 else None,
        }
        for site, ns in kept
    ]


def by_line(rows: Iterable[Mapping[str, Any]]) -> list[LineRow]:
    """The by-line view: CPU self time summed by call site over every row, largest
    first, each line with the operators it ran (their self time there)."""
    lines: dict[str, LineRow] = {}
    for row in rows:
        for site in row.get("sites") or ():
            name = site["site"]
            line = lines.get(name)
            if line is None:
                parsed = parse_site(name)
                line = lines[name] = {
                    "site": name,
                    "file": parsed[0] if parsed else None,
                    "line": parsed[1] if parsed else None,
                    "function": parsed[2] if parsed else None,
                    "cpu_self_seconds": 0.0,
                    "operators": {},
                }
            seconds = site["cpu_self_seconds"]
            line["cpu_self_seconds"] += seconds
            operators = line["operators"]
            operators[row["operator"]] = operators.get(row["operator"], 0.0) + seconds
    ordered = sorted(lines.values(), key=lambda line: -line["cpu_self_seconds"])
    for line in ordered:
        line["operators"] = dict(sorted(line["operators"].items(), key=lambda item: -item[1]))
    return ordered
