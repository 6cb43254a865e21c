"""Following rank channel files while a job runs, and finding a node's ranks by name (the
channel format is the real protocol's; the files are written as a rank writes them)."""

from __future__ import annotations

import os

from replay import make_row

from torchscan_tui.run.distributed import read_ranks
from torchscan_tui.run.protocol import encode
from torchscan_tui.run.rank_tail import RankTail


def _append(path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_the_tail_passes_on_whole_lines_only_as_each_rank_writes_them(tmp_path):
    tail = RankTail(str(tmp_path))
    assert tail.poll() == []  # no rank has started
    rows = encode({"type": "rows", "rows": [make_row("aten::mm", [[2, 2]], 1, 0.001)]})
    _append(tmp_path / "rank-0.local-0.channel", encode({"type": "phase", "phase": "profiling",
                                                 "step": 1, "steps": 2}))  # fmt: skip
    _append(tmp_path / "rank-0.local-0.channel", rows[:10])  # a line still being written
    assert [(rank, m["type"]) for rank, m in tail.poll()] == [(0, "phase")]
    _append(tmp_path / "rank-1.local-1.channel", b"noise from the workload\n" + rows)
    _append(tmp_path / "rank-0.local-0.channel", rows[10:])
    found = tail.poll()
    assert sorted((rank, m["type"]) for rank, m in found) == [(0, "rows"), (1, "rows")]
    assert found[0][1]["rows"][0]["operator"] == "aten::mm"
    assert tail.ranks == [0, 1] and tail.poll() == []
    tail.close()
    # what was followed is each rank's report, as reading the whole file makes it
    whole = read_ranks(str(tmp_path), 2)[0]
    for rank in (0, 1):
        assert tail.channels[rank].report["operators"] == whole[rank][1]["operators"]
        assert "rank" not in tail.channels[rank].report["operators"][0]


def test_a_second_nodes_ranks_are_found_by_their_global_rank(tmp_path):
    """On node 1 of a 2-node job (2 ranks a node) the ranks are 2 and 3, not 0 and 1."""
    for rank in (2, 3):
        path = tmp_path / f"rank-{rank}.local-{rank - 2}.channel"
        _append(path, encode({"type": "rows", "rows": [make_row("aten::mm", [[2]], 1, 0.001)]}))
        _append(path, encode({"type": "done", "rows": 1}))
        (tmp_path / f"local-{rank - 2}.rss").write_text(str(100 * 2**20 * (rank - 1)))
    reports, problems = read_ranks(str(tmp_path), 2)
    assert problems == [] and sorted(reports) == [2, 3]
    assert reports[3][1]["totals"]["process_peak_rss"]["value"] == 200 * 2**20  # local 1's
    os.remove(tmp_path / "rank-3.local-1.channel")
    reports, problems = read_ranks(str(tmp_path), 2)
    assert problems == ["1 of this node's 2 ranks never started a profile"]


def test_following_ends_quietly_when_the_folder_goes(tmp_path):
    """A folder that disappears (cleaned up under it) ends the live rows, not the run:
    no traceback from the following thread reaches the terminal."""
    import threading

    from torchscan_tui.run.rank_tail import follow_ranks

    folder = tmp_path / "ranks"
    folder.mkdir()
    _append(folder / "rank-0.local-0.channel", encode({"type": "rows", "rows": [
        make_row("aten::mm", [[2]], 1, 0.001)]}))  # fmt: skip
    seen, over, raised = [], threading.Event(), []
    tail = RankTail(str(folder))
    thread = threading.Thread(target=follow_ranks, args=(tail, 1, over, seen.append))
    default_hook, threading.excepthook = threading.excepthook, raised.append
    thread.start()
    while not seen:
        thread.join(0.05)
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    thread.join(2)
    threading.excepthook = default_hook
    assert not thread.is_alive()  # it ended on its own, before the job's end was said
    assert raised == []  # quietly: no exception for threading's hook to print
    over.set()
    assert seen[0].rows[0]["rank"] == 0
    assert not tail.complete  # stopped early: the job's end reads the files again
