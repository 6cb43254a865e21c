"""Where in the user's code: each operator's call sites and the by-line view (pure).

A profile recorded with ``with_stack`` gives each op its Python stack; in a trace before
Kineto's Python events that is the ``Call stack`` argument, innermost frame first:
``/…/site-packages/torch/nn/modules/linear.py(114): forward;train.py(54): <module>``.
An op's *call site* is the innermost frame in the user's files: the first that is not
in an installed package (``site-packages``, ``dist-packages``), the Python library or
built in. Grouping adds each op's self time to its row's sites (``Row.sites``); the
by-line view sums the sites over every row, as py-spy's and Scalene's by-line tables do.

A live run records no stacks in its window (torch's ``with_stack`` moved the CPU self
times by 27%): one step after the window is traced for call sites instead
(``worker/call_sites.py``), each Python call into torch wrapped in a range named
:data:`SITE_MARK` + its site. :func:`nested_sites` reads each op's site from the ranges
around it, a backward op's from the forward op it differentiates (autograd's sequence
number), and :func:`attach_step_sites` gives each row of the window the shares its
group had in that step, applied to the window's own self time.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from torchscan_tui.analysis.records import LineRow, Row, SiteRow

SITE = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<function>.*)$")
# Frames that are not the user's: installed packages, the standard library, built-ins.
_NOT_THE_USERS = re.compile(
    r"(site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python\d[\d.]*[/\\]|^<|^\w+\.pyx?\(0\)"
)
MAX_SITES = 20  # a row lists its 20 largest sites; the rest are summed as one
SITE_MARK = "[torchscan site] "  # a range around one call into torch, named by its site
STEP_AFTER_WINDOW = "the step after the window, traced for call sites (the times are the window's)"
FROM_CALL_STACK = "the trace's Call stack (with_stack)"
FROM_PYTHON_EVENTS = (
    "the trace's python_function events (with_stack): each frame by its function's first line"
)


# Kineto's python_function events name a frame by its path relative to its sys.path entry
# ("torch/nn/modules/module.py(1739): _call_impl", "typing.py(426): inner"): a frame whose
# top-level name is the standard library's or a package's that models are built on is
# not the user's. A package outside this list counts as the user's (said in docs/).
_LIBRARIES = frozenset(sys.stdlib_module_names) | {
    "torch", "torchvision", "torchaudio", "torchtext", "functorch", "triton", "numpy",
    "transformers", "accelerate", "lightning", "pytorch_lightning", "lightning_fabric",
    "timm", "datasets", "tokenizers", "huggingface_hub", "safetensors", "peft",
    "diffusers", "einops", "xformers", "flash_attn", "deepspeed", "apex", "fairscale",
    "torchmetrics", "torchdata", "tqdm", "_pytest", "pytest", "pluggy", "typing_extensions",
    "torchscan_tui",
}  # fmt: skip


def _is_users(frame: str) -> bool:
    """Whether one frame (``file(line): function``) is in the user's files."""
    return bool(SITE.match(frame)) and not _NOT_THE_USERS.search(frame)


def python_function_site(name: str) -> str | None:
    """The site a Kineto ``python_function`` event names, when it is one of the user's
    frames (``nn.Module: Linear_0`` and built-ins are not frames of a file)."""
    found = SITE.match(name)
    if found is None or not _is_users(name):
        return None
    path = found["file"]
    if not os.path.isabs(path):
        top = re.split(r"[/\\]", path, maxsplit=1)[0].removesuffix(".py")
        if top in _LIBRARIES:
            return None
    return name


def users_file(filename: str) -> bool:
    """Whether ``filename`` is one of the user's (see :func:`user_frame`)."""
    return not _NOT_THE_USERS.search(f"{filename}(1): ")


def user_frame(stack: str) -> str | None:
    """The innermost frame of ``stack`` (``;``-separated, innermost first) in the user's
    files; None when every frame is torch's or the library's."""
    for frame in stack.split(";"):
        frame = frame.strip()
        if frame and _is_users(frame):
            return frame
    return None


def call_sites(
    stacks: Sequence[object], seen: dict[str, str | None] | None = None
) -> list[str | None]:
    """Each event's stack where it has a call site of the user's (None: no stack, or none
    of the user's frames); an empty list when no event has a stack, so grouping skips the
    column. Stacks repeat (a loop's ops share theirs): each distinct one is read once and
    kept once (``seen``: what earlier calls read, for a trace read in batches).
    Grouping sums self time by stack; :func:`site_rows` folds them into sites."""
    if not any(stacks):
        return []
    found: dict[str, str | None] = {} if seen is None else seen
    kept: list[str | None] = []
    for stack in stacks:
        if not isinstance(stack, str) or not stack:
            kept.append(None)
            continue
        if stack not in found:
            found[stack] = stack if user_frame(stack) is not None else None
        kept.append(found[stack])
    return kept


def split_stack(stack: str) -> tuple[list[str], str | None, list[str]]:
    """``(inner, site, outer)``: the library's frames inside the call site (torch's,
    innermost first), the site, and the user's frames outside it (innermost first)."""
    frames = [frame.strip() for frame in stack.split(";") if frame.strip()]
    for index, frame in enumerate(frames):
        if _is_users(frame):
            return frames[:index], frame, [f for f in frames[index + 1 :] if _is_users(f)]
    return frames, None, []


def parse_site(site: str) -> tuple[str, int, str] | None:
    """``("train.py", 54, "<module>")`` from ``train.py(54): <module>``."""
    found = SITE.match(site)
    if found is None:
        return None
    return found["file"], int(found["line"]), found["function"]


def site_rows(self_ns: Mapping[str, int], row_self_ns: int) -> list[SiteRow]:
    """A row's sites from its self time by stack (or by site: a one-frame stack), largest
    first, each with its CPU self time, its share of the row's and the stack of its
    largest part; past :data:`MAX_SITES`, the rest as one ``(other sites)``."""
    by_site: dict[str, int] = {}
    largest: dict[str, tuple[int, str]] = {}
    for stack, ns in self_ns.items():
        site = user_frame(stack) or stack
        by_site[site] = by_site.get(site, 0) + ns
        if ns > largest.get(site, (-1, ""))[0]:
            largest[site] = (ns, stack)
    ordered = sorted(by_site.items(), key=lambda item: -item[1])
    kept, rest = ordered[:MAX_SITES], ordered[MAX_SITES:]
    rows: list[SiteRow] = []
    for site, ns in kept:
        row: SiteRow = {
            "site": site,
            "cpu_self_seconds": ns / 1e9,
            "share": ns / row_self_ns if row_self_ns > 0 else None,
        }
        stack = largest[site][1]
        if stack != site:
            row["stack"] = stack
        rows.append(row)
    if rest:
        ns = sum(ns for _, ns in rest)
        rows.append({"site": "(other sites)", "cpu_self_seconds": ns / 1e9,
                     "share": ns / row_self_ns if row_self_ns > 0 else None})  # fmt: skip
    return rows


def lines_matching(lines: Iterable[LineRow], text: str) -> list[LineRow]:
    """The lines whose site or operators hold every word of ``text`` (any case)."""
    words = text.casefold().split()
    if not words:
        return list(lines)
    return [
        line
        for line in lines
        if all(word in f"{line['site']} {' '.join(line['operators'])}".casefold() for word in words)
    ]


def sorted_lines(lines: Iterable[LineRow], by_device: bool = False) -> list[LineRow]:
    """Largest CPU (``by_device``: device; unmeasured last) self time first."""

    def largest_first(line: LineRow) -> float:
        return -((line["device_self_seconds"] or 0.0) if by_device else line["cpu_self_seconds"])

    return sorted(lines, key=largest_first)


def by_line(rows: Iterable[Mapping[str, Any]], by_device: bool = False) -> list[LineRow]:
    """The by-line view: CPU self time summed by call site over every row, each line with
    the operators it ran (their self time there); device self time by the same shares.
    Largest CPU (``by_device``: device) self time first."""
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
                    "device_self_seconds": None,
                    "operators": {},
                }
            seconds = site["cpu_self_seconds"]
            line["cpu_self_seconds"] += seconds
            device, share = row.get("device_self_seconds"), site.get("share")
            if device is not None and share is not None:
                line["device_self_seconds"] = (line["device_self_seconds"] or 0.0) + device * share
            operators = line["operators"]
            operators[row["operator"]] = operators.get(row["operator"], 0.0) + seconds

    ordered = sorted_lines(lines.values(), by_device)
    for line in ordered:
        line["operators"] = dict(sorted(line["operators"].items(), key=lambda item: -item[1]))
    return ordered


def marked_sites(names: Iterable[str]) -> list[str | None]:
    """The site each :data:`SITE_MARK` range names (None for every other event)."""
    cut = len(SITE_MARK)
    return [name[cut:] if name.startswith(SITE_MARK) else None for name in names]


def nested_sites(
    ranges: Sequence[str | None],
    threads: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    sequence_numbers: Sequence[int],
    backward: Sequence[bool],
) -> list[str | None]:
    """Each event's call site from the ranges around it: ``ranges[i]`` is the site that
    event ``i`` names when it is such a range (a :data:`SITE_MARK` range of a traced
    step, a Kineto ``python_function`` event in the user's files), else None. An event's
    site is the innermost such range around it on its thread; a backward op's (with a
    sequence number), the site of the forward op of the same sequence number, so
    ``AddmmBackward0`` and the ops under it count on the line that ran the ``addmm`` (a
    CPU backward runs inside ``loss.backward()``'s range, a device's on autograd's own
    thread). None where neither says (``AccumulateGrad``, our own calls)."""
    order = sorted(range(len(ranges)), key=lambda i: (threads[i], starts[i], -ends[i]))
    forward: dict[int, str] = {}  # sequence number -> the forward op's site
    sites: list[str | None] = [None] * len(ranges)
    for _ in range(2):  # the first pass learns every forward site, the second uses them
        open_ranges: list[tuple[int, str | None]] = []  # (end, site), innermost last
        thread = None
        for index in order:
            if threads[index] != thread:
                open_ranges.clear()
                thread = threads[index]
            end = ends[index]
            while open_ranges and open_ranges[-1][0] < end:  # not around this event
                open_ranges.pop()
            site = open_ranges[-1][1] if open_ranges else None
            named, number = ranges[index], sequence_numbers[index]
            if named is not None:
                site = named
            elif number >= 0 and backward[index]:
                site = forward.get(number, site)
            elif number >= 0 and site is not None:
                forward.setdefault(number, site)
            sites[index] = site
            open_ranges.append((end, site))
    return sites


SiteTable = dict[tuple[str, str], tuple[dict[str, int], int]]


def site_table(groups: Iterable[Any]) -> SiteTable:
    """(operator, shapes) -> (CPU self ns by site, the group's CPU self ns) of a step
    traced for call sites, from its groups (``groups.Group``); its own ranges left out."""
    return {
        (group.operator, str(group.input_shapes)): (dict(group.sites), group.cpu_self_ns)
        for group in groups
        if group.sites and not group.operator.startswith(SITE_MARK)
    }


def attach_step_sites(rows: Iterable[Row], table: SiteTable) -> int:
    """Each row of the window its sites from ``table``: each site's share of the
    group's self time in the traced step, applied to the row's self time in the window
    (the rows' times stay the window's). Returns how many rows got sites."""
    given = 0
    for row in rows:
        found = table.get((row["operator"], str(row["input_shapes"])))
        row_ns = round((row.get("cpu_self_seconds") or 0.0) * 1e9)
        if found is None or found[1] <= 0 or row_ns <= 0:
            continue
        by_site, step_ns = found
        scaled = {site: round(ns * row_ns / step_ns) for site, ns in by_site.items()}
        row["sites"] = site_rows(scaled, row_ns)
        given += 1
    return given
