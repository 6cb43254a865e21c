"""The figures behind the bar charts: per-operator shares and the largest compare moves."""

from __future__ import annotations

import pytest
from replay import make_row

from torchscan_tui.analysis.compare import compare_rows
from torchscan_tui.analysis.shares import delta_bars, time_shares


def test_shares_sum_an_operators_shapes_and_keep_the_rest_in_one_bar():
    rows = [
        make_row("aten::mm", [[8, 8]], 1, 0.030),
        make_row("aten::mm", [[4, 4]], 1, 0.010),
        make_row("aten::relu", [[8]], 1, 0.020),
        make_row("aten::add", [[8]], 1, 0.005),
        make_row("aten::mul", [[8]], 1, 0.004),
    ]
    shares = time_shares(rows, "cpu_self_seconds", top=2)
    assert [bar.label for bar in shares.bars] == ["aten::mm", "aten::relu", "other (2 operators)"]
    assert shares.bars[0].seconds == pytest.approx(0.040) and shares.bars[0].rows == 2
    assert shares.total_seconds == pytest.approx(0.069)
    assert sum(bar.fraction for bar in shares.bars) == pytest.approx(1.0)
    assert shares.bars[2].seconds == pytest.approx(0.009) and shares.bars[2].rows == 2


def test_unmeasured_figures_are_counted_not_taken_as_zero():
    rows = [make_row("aten::mm", [[8]], 1, 0.01, device=0.002), make_row("k", [], 1, 0.01)]
    shares = time_shares(rows, "device_self_seconds")
    assert shares.not_measured == 1 and shares.total_seconds == pytest.approx(0.002)
    assert [bar.label for bar in shares.bars] == ["aten::mm"]
    none = time_shares([make_row("k", [], 1, 0.01)], "device_self_seconds")
    assert none.total_seconds is None and none.bars == [] and none.not_measured == 1


def test_delta_bars_take_the_largest_moves_either_way_and_skip_unmeasured():
    before = [make_row("a", [[1]], 1, 0.010), make_row("b", [[1]], 1, 0.010)]
    after = [
        make_row("a", [[1]], 1, 0.001),
        make_row("b", [[1]], 1, 0.012),
        make_row("c", [[2]], 1, 0.004),
    ]
    bars = delta_bars(compare_rows(before, after), "cpu_self_seconds")
    assert [(bar.label, round(bar.delta, 6)) for bar in bars] == [
        ("a [[1]]", -0.009),
        ("c [[2]]", 0.004),
        ("b [[1]]", 0.002),
    ]
    assert bars[1].presence == "only_after"
    assert delta_bars(compare_rows(before, after), "device_self_seconds") == []
