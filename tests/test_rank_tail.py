"""Following rank channels while a job runs, through the files the session made for them
(the channel format is the real protocol's; the files are written as a rank writes them:
opened by the name handed to it, checked to be that very file)."""

from __future__ import annotations

import os

import pytest
from channel import line
from replay import make_row

from torchscan_tui.run.distributed import read_ranks
from torchscan_tui.run.handoff import HandoffFile
from torchscan_tui.run.protocol import MAX_LINE, InvalidMessage
from torchscan_tui.run.rank_files import NotTheHandoff, channel_name, open_handoff, rss_name
from torchscan_tui.run.rank_tail import RankTail

ROWS = line({"type": "rows", "rows": [make_row("aten::mm", [[2, 2]], 1, 0.001)]})


def tag(message) -> str:
    return type(message).__struct_config__.tag


def rank_says(rank, local):
    return line({"type": "rank", "rank": rank, "local_rank": local})


@pytest.fixture
def made(tmp_path, monkeypatch):
    """The session's side: channels and peak files made for two local ranks, named in
    the environment as a rank finds them."""
    files = {}
    for local in (0, 1):
        for name in (channel_name(local), rss_name(local)):
            files[name] = HandoffFile(str(tmp_path), name)
            monkeypatch.setenv(files[name].variable, files[name].spec)
    yield files
    for handoff in files.values():
        handoff.close()


def write(name, data: bytes) -> None:
    """As a rank writes: its file opened by the name handed to it."""
    fd = open_handoff(name)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def channels(made):
    return {local: made[channel_name(local)] for local in (0, 1)}


def test_the_tail_passes_on_whole_lines_only_as_each_rank_writes_them(made):
    tail = RankTail(channels(made))
    assert tail.poll() == []  # no rank has started
    write(channel_name(0), rank_says(2, 0) + line({"type": "phase", "phase": "profiling",
                                                     "step": 1, "steps": 2}))  # fmt: skip
    write(channel_name(0), ROWS[:10])  # a line still being written
    assert [(rank, tag(m)) for rank, m in tail.poll()] == [(2, "rank"), (2, "phase")]
    write(channel_name(1), rank_says(3, 1) + b"noise from the workload\n" + ROWS)
    write(channel_name(0), ROWS[10:] + line({"type": "done"}))
    write(channel_name(1), line({"type": "done"}))
    found = tail.poll()
    assert sorted((r, tag(m)) for r, m in found if tag(m) != "rank") == [
        (2, "done"), (2, "rows"), (3, "done"), (3, "rows")]  # fmt: skip
    assert tail.ranks == [2, 3] and tail.poll() == []
    made[rss_name(1)]._fd and write(rss_name(1), b"209715200")
    reports, problems = read_ranks(tail.every_channel, 2, {0: made[rss_name(0)],
                                                          1: made[rss_name(1)]})  # fmt: skip
    assert problems == [] and sorted(reports) == [2, 3]  # a second node's global ranks
    assert reports[3][1]["totals"]["process_peak_rss"]["value"] == 200 * 2**20  # local 1's
    assert reports[2][1]["totals"]["process_peak_rss"] is None  # local 0 wrote none
    assert reports[2][1]["operators"][0]["operator"] == "aten::mm"


def test_a_rank_that_never_started_is_named(made):
    tail = RankTail(channels(made))
    write(channel_name(0), rank_says(0, 0) + ROWS + line({"type": "done"}))
    tail.poll()
    reports, problems = read_ranks(tail.every_channel, 2, {})
    assert sorted(reports) == [0]
    assert problems == ["1 of this node's 2 ranks never started a profile"]


def test_a_forged_message_fails_the_rank_as_it_fails_a_plain_run(made):
    """Issue 26, point 3: it was accepted silently (exit 0, complete)."""
    tail = RankTail(channels(made))
    write(channel_name(0), rank_says(0, 0) + ROWS + b'{"type": "rows"}\n' + ROWS
          + line({"type": "done"}))  # fmt: skip
    tail.poll()
    reports, problems = read_ranks(tail.every_channel, 1, {})
    (problem,) = problems
    assert problem.startswith("rank 0: the profile channel carried a message the worker did")
    assert len(reports[0][1]["operators"]) == 1  # the rows before it kept, none after
    # a rank's messages before it said which rank it is, or a second rank line: forged too
    write(channel_name(1), ROWS)
    tail.poll()
    assert isinstance(tail.every_channel[1].terminal, InvalidMessage)


def test_a_line_with_no_end_is_bounded(made, monkeypatch):
    monkeypatch.setattr("torchscan_tui.run.rank_tail.MAX_LINE", 1000)
    tail = RankTail(channels(made))
    write(channel_name(0), rank_says(0, 0) + b"x" * 5000)
    tail.poll()
    assert tail.every_channel[0].terminal == InvalidMessage("a line over 1000 bytes")
    assert MAX_LINE >= 16 << 20  # a real message has room


def test_what_the_workload_puts_at_the_name_is_never_read(made, tmp_path):
    """Issue 26, point 2: a FIFO named like a channel hung the follower, a link to
    /dev/zero was read until memory ran out, a deleted folder ended the run with a
    traceback. The session reads its own descriptors; a rank writes only into the very
    file made for it."""
    tail = RankTail(channels(made))
    write(channel_name(0), rank_says(0, 0) + ROWS)
    os.unlink(tmp_path / channel_name(0))
    os.mkfifo(tmp_path / channel_name(0))  # a FIFO where the channel was
    os.unlink(tmp_path / channel_name(1))
    os.symlink("/dev/zero", tmp_path / channel_name(1))  # a link to an endless device
    found = tail.poll()  # returns at once, with what the real channel held
    assert [tag(m) for _, m in found] == ["rank", "rows"]
    with pytest.raises(OSError):  # the rank does not follow the link
        open_handoff(channel_name(1))
    os.unlink(tmp_path / channel_name(1))
    (tmp_path / channel_name(1)).write_bytes(b"")  # a file of the same name, not the one
    with pytest.raises(NotTheHandoff):
        open_handoff(channel_name(1))
    for path in tmp_path.iterdir():  # the whole folder deleted
        path.unlink()
    assert tail.poll() == []  # no traceback, nothing new


def test_other_nodes_ranks_come_one_after_another_in_the_remote_channel(tmp_path, monkeypatch):
    """Issue 31, point 2: rank 0 appends each other node's rank's channel (from the
    job's store) to one file; each stream opens with its rank's own message, and a line
    before any rank's message counts for nobody."""
    from torchscan_tui.run.rank_files import REMOTE_CHANNEL

    remote = HandoffFile(str(tmp_path), REMOTE_CHANNEL)
    monkeypatch.setenv(remote.variable, remote.spec)
    local = HandoffFile(str(tmp_path), channel_name(0))
    monkeypatch.setenv(local.variable, local.spec)
    done = line({"type": "done"})
    write(channel_name(0), rank_says(0, 0) + ROWS + done)
    write(REMOTE_CHANNEL, ROWS + rank_says(2, 0) + ROWS + done + rank_says(3, 1) + ROWS)
    tail = RankTail({0: local}, remote)
    found = tail.poll()
    assert [(rank, tag(message)) for rank, message in found] == [
        (0, "rank"), (0, "rows"), (0, "done"),
        (2, "rank"), (2, "rows"), (2, "done"), (3, "rank"), (3, "rows"),
    ]  # fmt: skip
    assert tail.ranks == [0, 2, 3]
    write(REMOTE_CHANNEL, done)  # rank 3's end, in a later look
    tail.poll()
    reports, problems = read_ranks(tail.every_channel, 1, {})
    assert sorted(reports) == [0, 2, 3] and problems == []
    assert [channel.rank for channel in tail.local_channels] == [0]
    tail.close()
