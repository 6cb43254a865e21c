"""Compare maths and the regression gate's exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import torchscan
from replay import make_row

from torchscan_tui.analysis.compare import compare_reports, gate, regressions, text_table
from torchscan_tui.formats.report import SCHEMA_NAME, save_report


def report(rows):
    return {
        "schema": SCHEMA_NAME,
        "schema_version": 1,
        "operators": rows,
        "context": {},
        "diagnostics": [],
        "totals": {},
    }


BEFORE = [
    make_row("aten::mm", [[8, 16], [16, 4]], 10, 0.010, net=64),
    make_row("aten::relu", [[8, 4]], 10, 0.002),
    make_row("aten::gone", [[1]], 1, 0.001),
]
AFTER = [
    make_row("aten::mm", [[8, 16], [16, 4]], 10, 0.005),
    make_row("aten::relu", [[8, 4]], 12, 0.003),
    make_row("aten::new", [[2]], 1, 0.0005),
]


def test_rows_match_on_operator_shapes_and_kind_with_deltas_and_ratios():
    diff = compare_reports(report(BEFORE), report(AFTER), "a", "b")
    rows = {row["operator"]: row for row in diff["rows"]}
    assert rows["aten::mm"]["cpu_self_seconds"] == {
        "before": 0.010,
        "after": 0.005,
        "delta": pytest.approx(-0.005),
        "ratio": 0.5,
    }
    assert rows["aten::relu"]["calls"]["delta"] == 2
    assert rows["aten::gone"]["presence"] == "only_before"
    assert rows["aten::new"]["presence"] == "only_after"
    assert rows["aten::new"]["cpu_self_seconds"]["ratio"] is None
    assert rows["aten::mm"]["device_self_seconds"]["delta"] is None  # not measured: no delta
    # Issue 20, bug 3: the largest change first, faster or slower: mm's -5 ms before
    # relu's +1 ms (ordered by signed delta, mm came last and never showed).
    assert [row["operator"] for row in diff["rows"]][:2] == ["aten::mm", "aten::relu"]
    assert diff["totals"]["cpu_self_seconds"]["before"] == pytest.approx(0.013)
    assert diff["totals"]["cpu_self_seconds"]["after"] == pytest.approx(0.0085)
    assert diff["totals"]["device_self_seconds"]["before"] is None


def test_gate_names_the_offenders():
    diff = compare_reports(report(BEFORE), report(AFTER), "a", "b")
    offenders = regressions(diff, 20)
    assert any(o.startswith("aten::relu [[8, 4]]: CPU") and "+50.0%" in o for o in offenders)
    assert any(o.startswith("aten::new [[2]]: new") for o in offenders)
    assert not any("total" in o for o in offenders)
    assert regressions(compare_reports(report(BEFORE), report(BEFORE), "a", "a"), 0) == []


def test_text_table_signs_deltas_and_marks_one_sided_rows():
    lines = text_table(compare_reports(report(BEFORE), report(AFTER), "a", "b")).splitlines()
    assert lines[1] == "total CPU self time 13.000 ms -> 8.500 ms (-4.500 ms, -34.6%)"
    relu, mm = (next(line for line in lines if name in line) for name in ("relu", "mm"))
    assert relu.split()[:8] == ["+1.000", "ms", "2.000", "ms", "3.000", "ms", "1.50x", "aten::relu"]
    assert mm.split()[:8] == ["-5.000", "ms", "10.000", "ms", "5.000", "ms", "0.50x", "aten::mm"]
    new = next(line for line in lines if "aten::new" in line)
    # Issue 20, 15: the side where the row does not exist reads "—", not "0.0 µs".
    assert new.split()[:7] == ["+500.0", "µs", "—", "500.0", "µs", "—", "new"]
    gone = next(line for line in lines if "aten::gone" in line)
    assert gone.split()[:7] == ["-1.000", "ms", "1.000", "ms", "—", "—", "gone"]


def test_headless_compare_json_and_exit_codes(tmp_path):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    save_report(report(BEFORE), before)
    save_report(report(AFTER), after)
    result = torchscan("--compare", before, after, "--json", tmp_path / "diff.json")
    assert result.returncode == 0, result.stderr
    diff = json.loads((tmp_path / "diff.json").read_text())
    assert diff["schema"] == "torchscan-tui/compare" and len(diff["rows"]) == 4
    gate = torchscan("--compare", before, after, "--fail-on-regression", "20")
    assert gate.returncode == 3
    assert "aten::relu" in gate.stderr and "regressions over 20%" in gate.stderr
    assert "aten::relu" in gate.stdout  # the text table
    ok = torchscan("--compare", before, before, "--fail-on-regression", "5")
    assert ok.returncode == 0 and "no regression over 5%" in ok.stderr


def test_compare_warns_of_a_side_that_is_incomplete(tmp_path):
    trace = (Path(__file__).parent / "data" / "cpu_trace.json").read_bytes()
    (tmp_path / "cut.json").write_bytes(trace[: len(trace) * 3 // 4])
    save_report({**report(BEFORE), "run": {"complete": False}}, tmp_path / "cancelled.json")
    result = torchscan("--compare", tmp_path / "cancelled.json", tmp_path / "cut.json")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert "cancelled.json holds an incomplete run" in warnings[0]
    assert "cut.json is cut short" in warnings[1]


def test_compare_a_trace_with_a_report(tmp_path):
    trace = Path(__file__).parent / "data" / "cpu_trace.json"
    save_report(report(BEFORE), tmp_path / "r.json")
    result = torchscan("--compare", trace, tmp_path / "r.json")
    assert result.returncode == 0, result.stderr
    assert "  gone  aten::mm [[4, 8], [8, 2]]" in result.stdout


@pytest.mark.parametrize(
    ("after", "says"),
    [
        (report([]), "has no rows: nothing was measured"),
        ({**report(BEFORE), "run": {"complete": False, "note": "cancelled"}},
         "is incomplete: cancelled"),
        (report([make_row("aten::mm", [[8, 16], [16, 4]], 10, 0.0)]),
         "has no CPU self time on any row"),
    ],
)  # fmt: skip
def test_the_gate_fails_on_an_after_side_that_measured_nothing(tmp_path, after, says):
    """Issue 16, point 14: these passed the gate (no row slower than a missing one)."""
    save_report(report(BEFORE), tmp_path / "before.json")
    save_report(after, tmp_path / "after.json")
    gate = torchscan(
        "--compare", tmp_path / "before.json", tmp_path / "after.json", "--fail-on-regression", "10"
    )
    assert gate.returncode == 3, gate.stderr
    assert f"after.json {says}" in gate.stderr


@pytest.mark.parametrize("percent", ["nan", "inf", "-1", "1e9", "ten"])
def test_the_gate_refuses_percentages_that_gate_nothing(tmp_path, percent):
    save_report(report(BEFORE), tmp_path / "r.json")
    gate = torchscan("--compare", tmp_path / "r.json", tmp_path / "r.json",
                   "--fail-on-regression", percent)  # fmt: skip
    assert gate.returncode == 2 and "--fail-on-regression" in gate.stderr
    assert "Traceback" not in gate.stderr


def test_compare_carries_the_peak_rss_of_both_runs(tmp_path):
    """Issue 20, 15: peak RSS in the compare header and JSON."""
    mib = 2**20
    before = {**report(BEFORE), "totals": {"process_peak_rss": {"value": 300 * mib}}}
    after = {**report(AFTER), "totals": {"process_peak_rss": {"value": 330 * mib}}}
    diff = compare_reports(before, after, "a", "b")
    assert diff["totals"]["process_peak_rss"]["delta"] == 30 * mib
    assert diff["totals"]["process_peak_rss"]["ratio"] == 1.1
    assert "peak RSS 300.0 MiB -> 330.0 MiB" in text_table(diff)
    traces = compare_reports(report(BEFORE), report(AFTER), "a", "b")
    assert traces["totals"]["process_peak_rss"]["before"] is None
    assert "peak RSS" not in text_table(traces)


def stepped(operator, seconds_per_step):
    """A row profiled over a window of steps, with its per-step figures."""
    row = make_row(operator, [[4]], len(seconds_per_step), sum(seconds_per_step))
    ordered = sorted(seconds_per_step)
    row["cpu_self_seconds_per_step"] = {
        "min": ordered[0],
        "median": ordered[len(ordered) // 2],
        "max": ordered[-1],
        "steps": len(ordered),
    }
    return row


def test_the_gate_tells_a_change_from_the_noise_of_the_steps():
    """Issue 18, 5: a row regresses only when its median per step moves beyond the
    threshold and beyond both runs' spread; within the spread it is listed, not failed."""
    before = [
        stepped("aten::noisy", [0.010, 0.006, 0.014]),  # median 10 ms, spread 8 ms
        stepped("aten::steady", [0.010, 0.0101, 0.0099]),
    ]
    after = [
        stepped("aten::noisy", [0.013, 0.008, 0.016]),  # +30%, but within 8 ms of noise
        stepped("aten::steady", [0.013, 0.0131, 0.0129]),  # +30%, far beyond 0.2 ms
    ]
    offenders, within_noise = gate(compare_reports(report(before), report(after), "a", "b"), 20)
    assert any(line.startswith("aten::steady") for line in offenders)
    assert not any(line.startswith("aten::noisy") for line in offenders)
    assert [line.split(" ")[0] for line in within_noise] == ["aten::noisy"]
    assert "step spread 8.000 ms" in within_noise[0]


def test_the_gate_without_steps_compares_totals_as_before():
    diff = compare_reports(report(BEFORE), report(AFTER), "a", "b")
    assert gate(diff, 10) == (regressions(diff, 10), [])


def test_the_compare_json_says_which_rows_were_within_noise(tmp_path):
    before = [stepped("aten::noisy", [0.010, 0.006, 0.014])]
    after = [stepped("aten::noisy", [0.013, 0.008, 0.016])]
    save_report(report(before), tmp_path / "a.json")
    save_report(report(after), tmp_path / "b.json")
    done = torchscan("--compare", tmp_path / "a.json", tmp_path / "b.json",
                     "--json", tmp_path / "d.json", "--fail-on-regression", "25")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "within noise, not counted: aten::noisy" in done.stderr
    gated = json.loads((tmp_path / "d.json").read_text())["gate"]
    assert gated["percent"] == 25 and gated["regressions"] == []  # the total: +23%
    assert gated["within_noise"][0].startswith("aten::noisy")


def test_by_operator_merges_each_sides_shapes_before_matching():
    """Issue 20, 15: a model whose shapes changed compares operator by operator."""
    before = [make_row("aten::mm", [[8, 16]], 2, 0.004), make_row("aten::mm", [[4, 16]], 1, 0.002),
              make_row("aten::relu", [[8]], 1, 0.001, device=0.0005)]  # fmt: skip
    after = [make_row("aten::mm", [[16, 16]], 3, 0.009), make_row("aten::relu", [[16]], 1, 0.001)]
    by_shape = compare_reports(report(before), report(after), "a", "b")
    assert {row["presence"] for row in by_shape["rows"]} == {"only_before", "only_after"}
    diff = compare_reports(report(before), report(after), "a", "b", by="operator")
    assert diff["by"] == "operator"
    mm, relu = diff["rows"]
    assert mm["operator"] == "aten::mm" and mm["presence"] == "both"
    assert mm["calls"] == {"before": 3, "after": 3, "delta": 0, "ratio": 1.0}
    assert mm["cpu_self_seconds"]["before"] == pytest.approx(0.006)
    assert mm["cpu_self_seconds"]["delta"] == pytest.approx(0.003)
    assert mm["merged_shapes"] == {"before": 2, "after": 1}
    # device time measured on one side only: no device figure, never a made-up zero
    assert relu["device_self_seconds"]["after"] is None
    assert relu["device_self_seconds"]["delta"] is None
    text = text_table(diff)
    assert "by operator" in text and "aten::mm (shapes merged: 2 → 1)" in text


@pytest.mark.slow
def test_headless_compare_by_operator_of_two_real_runs_whose_batch_changed(tmp_path):
    """Two real profiles of one model at batch 8 and 16: by shape every row is new or
    gone; ``--by operator`` matches each operator on both sides."""
    workload = Path(__file__).parent / "workloads" / "batch_mlp.py"
    for batch in (8, 16):
        result = torchscan(workload, "--json", tmp_path / f"b{batch}.json", "--", batch)
        assert result.returncode == 0, result.stderr
    pair = (tmp_path / "b8.json", tmp_path / "b16.json")
    by_shape = torchscan("--compare", *pair, "--json", tmp_path / "shape.json")
    assert by_shape.returncode == 0, by_shape.stderr
    rows = json.loads((tmp_path / "shape.json").read_text())["rows"]
    addmm = [row for row in rows if row["operator"] == "aten::addmm"]
    assert {row["presence"] for row in addmm} == {"only_before", "only_after"}
    by_op = torchscan("--compare", *pair, "--by", "operator", "--json", tmp_path / "op.json")
    assert by_op.returncode == 0, by_op.stderr
    diff = json.loads((tmp_path / "op.json").read_text())
    addmm = [row for row in diff["rows"] if row["operator"] == "aten::addmm"]
    assert len(addmm) == 1 and addmm[0]["presence"] == "both"
    assert addmm[0]["calls"]["before"] == addmm[0]["calls"]["after"] == 6  # 2 layers x 3
    assert diff["by"] == "operator"
    refused = torchscan(workload, "--by", "operator")
    assert refused.returncode != 0 and "--by needs --compare" in refused.stderr


def with_unprofiled_steps(rows, median):
    said = report(rows)
    said["run"] = {"unprofiled_steps": {"steps": 20, "median_seconds": median,
                                        "min_seconds": median, "max_seconds": median}}  # fmt: skip
    return said


def test_the_gate_uses_the_unprofiled_step_time_where_both_sides_have_it():
    """Issue 28, point 13: the spec measures latency without the profiler. Both runs'
    peak passes timed their steps: that is the gate's total, not the profiled sum."""
    same = [make_row("aten::mm", [[8]], 10, 0.010)]
    more_cpu = [make_row("aten::mm", [[8]], 10, 0.013)]  # +30% profiled, same clean speed
    diff = compare_reports(with_unprofiled_steps(same, 0.2), with_unprofiled_steps(more_cpu, 0.2),
                           "a", "b")  # fmt: skip
    assert diff["totals"]["unprofiled_step_seconds"]["ratio"] == 1.0
    offenders, noise = gate(diff, 20)
    assert not any(o.startswith("total CPU") for o in offenders)
    assert any(n.startswith("total CPU self time +30.0%") for n in noise)
    slower = compare_reports(with_unprofiled_steps(same, 0.2), with_unprofiled_steps(same, 0.3),
                             "a", "b")  # fmt: skip
    assert regressions(slower, 20) == ["unprofiled step median 200.000 ms -> 300.000 ms (+50.0%)"]
    assert "unprofiled step median 200.000 ms -> 300.000 ms (1.50x)" in text_table(slower)
    # One side without it (a trace): the profiled totals, as before.
    mixed = compare_reports(report(same), with_unprofiled_steps(more_cpu, 0.2), "a", "b")
    assert any(o.startswith("total CPU self time") for o in regressions(mixed, 20))
