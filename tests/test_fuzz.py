"""Fuzzing the files from outside (issue 26): a real multi-rank report and a real trace,
each mutated at random places in random ways (a value of another type, a field gone, a
control character, deep nesting), a few hundred times from fixed seeds. Every mutant is
either opened or refused in one line naming the file (a ReportError), never anything else;
and a mutant that is opened goes through everything that words a report without a
crash: the text summary, the header's lines, the rank view's lines, the overview's."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from references import DATA

from torchscan_tui.analysis.overview import overview_lines
from torchscan_tui.analysis.ranks import straggler_lines
from torchscan_tui.analysis.step_summary import peak_scope, step_line
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.formats.report import ReportError, dumps_report
from torchscan_tui.formats.text_summary import report_text

CASES = 150
ODD_VALUES = ["x", 5, -1, 1.5, None, True, [], {}, [0], {"a": 1}, "\x1b[2J\x07", "9" * 400,
              float("inf"), [[[[[]]]]]]  # fmt: skip


def _paths(value, path=()):
    """Every place in a JSON value: (path, value) pairs."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):  # a few of each list is enough
            yield from _paths(item, (*path, index))


def _mutate(document, rng: random.Random):
    mutant = copy.deepcopy(document)
    places = [path for path, _ in _paths(mutant) if path]
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(places)
        parent = mutant
        try:
            for key in path[:-1]:
                parent = parent[key]
            last = path[-1]
            choice = rng.random()
            if choice < 0.6:
                parent[last] = rng.choice(ODD_VALUES)
            elif choice < 0.8 and isinstance(parent, dict):
                del parent[last]
            else:
                parent[last] = [parent[last]]
        except (KeyError, IndexError, TypeError):
            continue
    return mutant


def _words_everything(report: dict) -> None:
    """What the app and the text output word from a report's head."""
    from torchscan_tui.ui.screens.rank_screen import describe_rank

    report_text(report, "fuzzed.json", report["operators"])
    context = report.get("context") or {}
    straggler_lines(context)
    step_line(context)
    peak_scope(report.get("run"))
    overview_lines(report.get("overview") or {})
    for summary in (report.get("ranks") or {}).get("per_rank") or []:
        describe_rank(summary)


def _source_report(tmp_path_factory) -> dict:
    """A real report with every block: a rank directory made from a real NCCL trace."""
    from rank_pair import write_rank_pair

    from torchscan_tui.formats.ranks import open_rank_directory

    folder = tmp_path_factory.mktemp("pair")
    write_rank_pair(folder)
    report, _ = open_rank_directory(folder)
    report["operators"] = report["operators"][:5]  # the head is the point; rows are few
    for summary in report["ranks"]["per_rank"]:
        summary["operators"] = summary["operators"][:3]
        summary["kernels"] = summary["kernels"][:3]
    report["kernels"] = report["kernels"][:3]
    return json.loads(dumps_report(report))


@pytest.fixture(scope="module")
def source_report(tmp_path_factory):
    return _source_report(tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(CASES))
def test_a_mutated_report_opens_or_is_refused_in_one_line(source_report, tmp_path, seed):
    rng = random.Random(seed)
    mutant = _mutate(source_report, rng)
    path = tmp_path / "fuzzed.json"
    path.write_text(json.dumps(mutant, allow_nan=True))
    try:
        report, _ = open_profile(path)
    except ReportError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    _words_everything(report)


TRACE = Path(DATA) / "cpu_trace.json"


@pytest.mark.parametrize("seed", range(CASES))
def test_a_mutated_trace_opens_or_is_refused_in_one_line(tmp_path, seed):
    rng = random.Random(1000 + seed)
    mutant = _mutate(json.loads(TRACE.read_text()), rng)
    path = tmp_path / "fuzzed.json"
    path.write_text(json.dumps(mutant, allow_nan=True))
    try:
        report, _ = open_profile(path)
    except ReportError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    _words_everything(report)
