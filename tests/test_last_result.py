"""What r keeps on screen until a new run's rows come (pure, no Textual)."""

from __future__ import annotations

from torchscan_tui.ui.last_result import LastResult


def test_nothing_kept_before_a_first_good_run():
    kept = LastResult()
    assert kept.begin_run() == [] and not kept.showing
    assert kept.run_ended("failed", [], {"a": 1}) == (None, {"a": 1})
    assert kept.rows is None


def test_a_rerun_stands_in_until_rows_come_and_goes_back_when_none_do():
    kept = LastResult()
    kept.begin_run()
    last = {"context": {"cpu_self_seconds_sum": 1.0}, "kernels": [{"kernel": "k"}]}
    kept.run_ended("done", ["row"], last)
    assert kept.begin_run() == ["row"] and kept.showing
    rows, head = kept.run_ended("cancelled", [], {"context": {"device": "cpu"}})
    assert rows is None  # the last result's rows and head stay, its context updated
    assert head == {"context": {"cpu_self_seconds_sum": 1.0, "device": "cpu"},
                    "kernels": [{"kernel": "k"}]}  # fmt: skip
    assert kept.begin_run() == ["row"]
    assert kept.rows_came() is True and not kept.showing  # the new rows replace it
    assert kept.rows_came() is False  # later rows extend
    kept.run_ended("done", ["new"], {"context": {"cpu_self_seconds_sum": 2.0}})
    assert kept.rows == ["new"]


def test_a_done_run_without_rows_is_news_not_a_failure():
    kept = LastResult()
    kept.run_ended("done", ["row"], {})
    kept.begin_run()
    assert kept.run_ended("done", [], {"c": 1}) == ([], {"c": 1})
    assert kept.rows is None and kept.begin_run() == []
