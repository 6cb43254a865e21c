"""The profile screen's parts that need no app: whose rows show in a multi-rank session,
which actions apply and why not, and what each widget shows of the run's state."""

from __future__ import annotations

from replay import make_row

from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.formats.report_schema import RANK_TRACES_SOURCE, TRACE_SOURCE
from torchscan_tui.run.events import PhaseChanged, ProfileMeta, RunFinished
from torchscan_tui.ui.action_rules import NO_MEMORY, NO_RANKS, RULES, Facts, rule_for
from torchscan_tui.ui.rank_selection import RankSelection
from torchscan_tui.ui.run_state import RunState
from torchscan_tui.ui.screen_figures import (
    facts_of,
    heading_of,
    row_counts_of,
    rss_figures_of,
    share_of,
)
from torchscan_tui.ui.widgets.notes_line import notes_text

CROSS = [make_row("aten::mm", [[2]], 3, 0.002)]
PER_RANK = [
    {"rank": 0, "rows": 1, "host_cpu_self_seconds": 0.001, "host_collective_seconds": 0.0,
     "host_compute_seconds": 0.001, "operators": [make_row("aten::mm", [[2]], 3, 0.001)]},
    {"rank": 1, "rows": 1, "host_cpu_self_seconds": 0.003, "host_collective_seconds": 0.0,
     "host_compute_seconds": 0.003, "operators": [make_row("aten::mm", [[2]], 3, 0.003)]},
]  # fmt: skip


def test_a_rank_shown_keeps_the_cross_rank_rows_for_going_back_and_saving():
    ranks = RankSelection()
    assert ranks.choose(1, CROSS, PER_RANK) == PER_RANK[1]["operators"]
    assert ranks.shown == 1 and ranks.described() == "rank 1's own rows"
    assert ranks.session_rows(PER_RANK[1]["operators"]) is CROSS  # saved: every rank's
    assert ranks.choose(0, PER_RANK[1]["operators"], PER_RANK) == PER_RANK[0]["operators"]
    assert ranks.choose(None, PER_RANK[0]["operators"], PER_RANK) is CROSS
    assert ranks.choose(7, CROSS, PER_RANK) is None and ranks.shown is None  # no rank 7
    ranks.choose(1, CROSS, PER_RANK)
    ranks.reset()
    assert ranks.shown is None and ranks.session_rows(CROSS) is CROSS


def test_each_rule_says_when_its_action_applies_and_why_not():
    reopened = Facts(rerunnable=False)
    assert not RULES["rerun"].applies(reopened)
    assert "no workload to run again" in RULES["rerun"].why_not(reopened)
    running = Facts(rerunnable=True, running=True)
    assert not RULES["rerun"].applies(running) and RULES["rerun"].why_not(running) is None
    assert RULES["cancel_run"].applies(running)
    assert rule_for("sort", ("device",)) is RULES["sort('device')"]
    assert rule_for("sort", ("cpu",)) is None  # the cpu sort always applies
    said = RULES["export_trace"].why_not(Facts(named_trace="/data/t.json"))
    assert "names a trace at /data/t.json, which is only shown, never copied" in said
    assert "is gone" in RULES["export_trace"].why_not(Facts(kept_trace="/tmp/x.json"))
    assert not RULES["toggle_log"].applies(reopened)
    assert RULES["toggle_log"].applies(Facts(log=True))


def test_a_views_key_pressed_before_the_results_says_they_are_not_in_yet():
    """A view's key pressed while the run goes on, or a big trace is read (seconds),
    said nothing: it read as a key that does nothing. Now it says why, and once the
    run is over, why the view is not there."""
    reading = Facts(running=True, reading=True)
    live = Facts(running=True, rerunnable=True)
    assert RULES["overview"].why_not(reading) == (
        "No step overview yet: the trace is still being read."
    )
    assert RULES["kernels"].why_not(live) == "No kernel view yet: the run's results are not in."
    assert (
        RULES["by_line"].why_not(reading) == "No source lines yet: the trace is still being read."
    )
    assert RULES["memory"].why_not(Facts()) == NO_MEMORY  # over: why there is none
    assert RULES["ranks"].why_not(live) is None  # a run of one process has none to come
    assert RULES["ranks"].why_not(Facts()) == NO_RANKS


def test_what_the_widgets_show_is_the_states():
    state = RunState()
    state.start()
    assert heading_of(state, "train.py", "cpu", None, 0, None).phase == "starting"
    state.apply(PhaseChanged("profiling", 3, 6))
    context = {"device": "cpu", "ranked_by": "device_self_seconds", "total_grouped_operators": 9,
               "cpu_self_seconds_sum": 0.5, "device_self_seconds_sum": 0.25}  # fmt: skip
    state.apply(ProfileMeta({"context": context, "diagnostics": []}))
    heading = heading_of(state, "train.py", "?", 1.5, 4, None)
    assert heading.running and "step 3 of 6" in heading.phase_label and heading.device == "cpu"
    assert share_of(state, "rank") == ("device_self_seconds", 0.25)  # as the rows are ranked
    assert share_of(state, "cpu") == ("cpu_self_seconds", 0.5)  # as they are sorted
    view = RowView(list(CROSS))
    counts = row_counts_of(state, view, "hello")
    assert (counts.shown, counts.received, counts.total, counts.ended) == (1, 1, 9, False)
    state.apply(RunFinished("done", "ok", {"run": {"complete": True}}, True))
    facts = facts_of(state, rerunnable=True, device_time=False, ranks=False, log_shown=False)
    assert facts.has_report and not facts.running and not facts.trace_open
    assert not RULES["sort('device')"].applies(facts) and RULES["rerun"].applies(facts)


def test_while_a_trace_is_read_the_headers_figures_say_they_are_its_first_parts():
    state = RunState()
    state.start()
    state.apply(PhaseChanged("reading", share=0.3))
    assert heading_of(state, "big.json", "?", None, 0, None).device == "?"  # nothing yet
    context = {"device": "cuda", "cpu_self_seconds_sum": 0.5}
    state.apply(ProfileMeta({"context": context, "diagnostics": []}))  # the early rows'
    heading = heading_of(state, "big.json", "?", None, 0, None)
    assert heading.device == "cuda, in the first part"
    assert heading.totals.startswith("first part: Σ CPU self")
    state.apply(PhaseChanged("opened"))  # the whole trace's
    heading = heading_of(state, "big.json", "?", None, 0, None)
    assert heading.device == "cuda" and not heading.totals.startswith("first part")


def test_a_trace_without_a_peak_says_a_trace_records_none_and_where_one_comes_from():
    """A trace (or a report made of one) said "no RSS figure for this run or file": true,
    but not why, nor what would give one."""
    state = RunState()
    state.apply(ProfileMeta({"context": {"device": "cuda", "source": TRACE_SOURCE},
                             "diagnostics": []}))  # fmt: skip
    state.apply(RunFinished("done", "ok", {"run": {"complete": True}}, True))
    figures = rss_figures_of(state)
    assert figures.rss is None and not figures.pending
    assert figures.missing == (
        "a profiler trace records no process RSS; run the script itself to measure it"
    )
    ranks = RunState()
    ranks.apply(ProfileMeta({"context": {"device": "cpu", "source": RANK_TRACES_SOURCE},
                             "diagnostics": []}))  # fmt: skip
    ranks.apply(RunFinished("done", "ok", {"run": {"complete": True}}, True))
    assert rss_figures_of(ranks).missing == figures.missing  # a folder of rank traces
    plain = RunState()
    plain.apply(RunFinished("done", "ok", {"run": {"complete": True}}, True))
    assert rss_figures_of(plain).missing == "no RSS figure for this run or file"


def test_a_note_too_long_for_its_line_is_cut_where_it_says_where_the_rest_is():
    """The warning line cut a long note at the terminal's edge, often the part the note
    was for ("rows are sorted by how much ..."), with nothing saying there was more."""
    note = ("cross_rank_rows", "4 ranks in one session: each row shows the median rank's "
            "figures; rows are sorted by how much the ranks differ")  # fmt: skip
    whole = notes_text((note,)).plain
    assert (
        whole == f" ⚠ cross_rank_rows: {note[1]}" and notes_text((note,), width=200).plain == whole
    )
    cut = notes_text((note,), width=80).plain
    assert len(cut) == 80 and cut.endswith("… (all of it: enter on a row)")
    assert cut.startswith(" ⚠ cross_rank_rows: 4 ranks in one session")
    two = notes_text((note, ("other", "x")), width=80).plain
    assert len(two) == 80 and two.endswith("… (all of it and 1 more: enter on a row)")
    assert notes_text((note,), width=40).plain == whole  # no room to say it: cut at the edge
    short = notes_text((("a", "b"), ("c", "d")), width=80).plain
    assert short == " ⚠ a: b  (+1 more note: enter on a row)"
