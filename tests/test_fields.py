"""The row's field table (analysis/fields.py) is the one place a row's field is declared:
sorts, exports, the text summary and the rank view follow it."""

from __future__ import annotations

import pytest
from replay import make_row

from torchscan_tui.analysis import fields, ranks
from torchscan_tui.analysis.fields import FIELDS, ROW_FIELDS, RowField
from torchscan_tui.analysis.ranks import cross_rank_rows
from torchscan_tui.analysis.sorting import SORT_LABELS, Sort
from torchscan_tui.formats.export import COLUMNS, rows_to_markdown
from torchscan_tui.formats.text_summary import report_text


def per_rank_rows(extra: dict[int, dict]) -> dict[int, list]:
    """The same operator on three ranks, each row with ``extra[rank]`` added."""
    return {
        rank: [{**make_row("aten::mm", [[2, 2]], calls, cpu, device), **extra[rank]}]
        for rank, (calls, cpu, device) in {
            0: (10, 0.001, None), 1: (12, 0.003, 0.004), 2: (11, 0.002, 0.002)
        }.items()
    }  # fmt: skip


def test_a_row_field_nobody_declared_reaches_the_rank_view_as_the_first_ranks():
    extra = {rank: {"source_line": f"train.py:{40 + rank}"} for rank in range(3)}
    (row,) = cross_rank_rows(per_rank_rows(extra))
    assert row["source_line"] == "train.py:40"


def test_a_new_figure_in_the_field_table_is_the_median_rank_in_the_rank_view(monkeypatch):
    peak = RowField("cpu_peak_bytes", "CPU peak bytes", "peak", "bytes", across_ranks="median")
    monkeypatch.setattr(ranks, "ROW_FIELDS", (*ROW_FIELDS, peak))  # one line in the table
    extra = {0: {"cpu_peak_bytes": 4096}, 1: {"cpu_peak_bytes": 1024}, 2: {}}
    (row,) = cross_rank_rows(per_rank_rows(extra))
    assert row["cpu_peak_bytes"] == 1024  # median of 4096, 1024 and the 0 of a rank without
    assert row["calls"] == 11 and row["cpu_self_seconds"] == pytest.approx(0.002)
    assert row["device_self_seconds"] == pytest.approx(0.003)  # of the ranks that measured


def test_sorts_exports_and_the_text_summary_follow_the_table():
    assert COLUMNS == tuple(field.key for field in ROW_FIELDS if field.export)
    for field in ROW_FIELDS:
        if field.sort:
            assert Sort(field.sort).describe() == f"{field.short} ↓"
            assert SORT_LABELS[field.sort] == field.short
    rows = [make_row("aten::mm", [[2, 2]], 3, 0.0015, None, 2048)]
    table = rows_to_markdown(rows)
    assert "| 1.500 ms |" in table and "| +2.0 KiB |" in table and "| — |" in table
    text = report_text({"context": {}}, "r.json", rows)
    heading = text.splitlines()[1]
    assert all(FIELDS[key].short in heading for key in ("cpu_self_seconds", "calls"))
    assert "1.500 ms" in text.splitlines()[2]


def test_every_unit_has_its_text():
    assert {field.unit for field in ROW_FIELDS} <= set(fields.Unit.__args__)
    assert FIELDS["calls"].text(12345) == "12,345"
    assert FIELDS["cpu_net_bytes"].text(-2048) == "-2.0 KiB"
    assert FIELDS["cpu_net_bytes"].text(2048, signed=True) == "+2.0 KiB"
    assert FIELDS["input_shapes"].text([[2, 3], []]) == "[[2, 3], []]"
    assert FIELDS["device_self_seconds"].text(None) == "—"
