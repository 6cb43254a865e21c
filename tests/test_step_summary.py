"""The per-step spread line a row's detail shows (analysis/step_summary.py)."""

from torchscan_tui.analysis.step_summary import PER_STEP, spread_text


def test_a_spread_over_steps_names_its_median_mean_range_and_steps():
    row = {PER_STEP: {"median": 0.002, "mean": 0.0021, "min": 0.0015, "max": 0.003, "steps": 5}}
    assert spread_text(row) == (
        "median 2.000 ms a step, mean 2.100 ms (1.500 ms-3.000 ms over 5 steps)"
    )


def test_one_profiled_step_says_its_figure_once_not_as_a_spread_of_one():
    # A workload() script profiles one step by default: "over 1 steps" read wrong, and
    # its median, mean, least and most were the same figure four times.
    row = {PER_STEP: {"median": 0.003085, "mean": 0.003085, "min": 0.003085,
                      "max": 0.003085, "steps": 1}}  # fmt: skip
    assert spread_text(row) == "3.085 ms in the one profiled step (no spread)"


def test_a_row_without_a_spread_has_no_line():
    assert spread_text({}) is None
