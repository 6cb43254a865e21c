"""The noise rows h hides: [memory] rows and view-only operators, from a real profile."""

from __future__ import annotations

import torch
from replay import make_row

from torchscan_tui import profile_workload
from torchscan_tui.analysis.noise import VIEW_OPERATORS, is_noise
from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.analysis.sorting import Sort


def _attention_like() -> None:
    x = torch.randn(4, 8, 16)
    q = x.view(4, 8, 2, 8).transpose(1, 2)
    scores = q @ q.transpose(-1, -2)
    scores.softmax(-1).reshape(4, -1).sum()


def test_hiding_noise_leaves_the_compute_of_a_real_profile(tmp_path):
    rows = profile_workload(_attention_like, device="cpu", trace_path=tmp_path / "t.json")[
        "operators"
    ]
    names = {row["operator"] for row in rows}
    assert {"aten::view", "aten::transpose"} <= names  # the profile has views to hide
    view = RowView(list(rows))
    view.set_hide_noise(True)
    shown = {view.rows[i]["operator"] for i in view.visible}
    assert not shown & VIEW_OPERATORS
    assert {"aten::matmul", "aten::softmax", "aten::sum"} <= shown or "aten::bmm" in shown
    assert all(not is_noise(name.lower(), "operator") for name in shown)
    view.set_hide_noise(False)
    assert len(view.visible) == len(rows)


def test_noise_hiding_composes_with_the_filter_sort_and_streamed_rows():
    view = RowView(
        [make_row("aten::mm", [[8, 8]], 1, 0.002), make_row("[memory]", [], 3, 0.0, kind="memory")]
    )
    view.set_hide_noise(True)
    view.set_sort(Sort("cpu", True))
    view.extend(
        [make_row("aten::view", [[8, 8]], 5, 0.001), make_row("aten::add", [[8]], 1, 0.003)]
    )
    assert [view.rows[i]["operator"] for i in view.visible] == ["aten::add", "aten::mm"]
    view.set_filter("-add")
    assert [view.rows[i]["operator"] for i in view.visible] == ["aten::mm"]
    view.set_sort(Sort())  # rank order, noise still hidden as rows stream in
    view.set_filter("")
    view.extend([make_row("aten::t", [[8, 8]], 1, 0.0001)])
    assert [view.rows[i]["operator"] for i in view.visible] == ["aten::mm", "aten::add"]
