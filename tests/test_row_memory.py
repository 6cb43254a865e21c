"""Decoded rows in less memory (formats/row_memory.py): equal plain dicts and lists, less
held, on real rows (a live run's report, tests/data/)."""

from __future__ import annotations

import json
import platform
import sys
import tracemalloc
from pathlib import Path

import msgspec
import pytest

from torchscan_tui.formats.compact_records import as_plain
from torchscan_tui.formats.report_schema import accept_rows
from torchscan_tui.formats.row_memory import ONE, compact, same_float, shared_shapes
from torchscan_tui.run import protocol

REAL_REPORT = Path(__file__).parent / "data" / "real_report_train_transformer.json"


def real_rows() -> list[dict]:
    return json.loads(REAL_REPORT.read_text())["operators"]


def held_bytes(make) -> int:
    """What the objects ``make()`` returns hold, as tracemalloc counts it."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        held = tracemalloc.get_traced_memory()[0] - before
        del made
        return held
    finally:
        tracemalloc.stop()


def test_a_compact_row_is_an_equal_plain_dict_in_the_same_order_and_encodes_the_same():
    for row in real_rows():
        made = compact(row)
        assert type(made) is dict and made == row and list(made) == list(row)
        assert msgspec.json.encode(made) == msgspec.json.encode(row)
        assert json.dumps(made) == json.dumps(row)
    made = compact(real_rows()[0])
    made["later"] = 1  # a key added afterwards is kept like any dict's
    assert made["later"] == 1 and list(made)[-1] == "later"


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="CPython's tables")
def test_compact_rows_hold_less_than_decoded_ones():
    rows = real_rows() * 20
    decoded = held_bytes(lambda: [dict(row) for row in rows])
    compacted = held_bytes(lambda: [compact(row) for row in rows])
    assert compacted < 0.8 * decoded, (compacted, decoded)


@pytest.mark.parametrize("key", ["__weakref__", "__class__", "__dict__", "", "a b", "é"])
def test_keys_a_class_cannot_take_leave_the_row_equal(key):
    row = {key: 1, "operator": "aten::mm"}
    assert compact(row) == row and list(compact(row)) == [key, "operator"]


def test_equal_flat_shapes_become_one_list_and_others_stay_as_they_are():
    nested = [[2, 3], [4]]  # a tensor list input: not a flat shape
    first = shared_shapes([[8, 16], [], nested, 7])
    second = shared_shapes([[8, 16], [], [[2, 3], [4]], 7])
    assert first == second == [[8, 16], [], nested, 7]
    assert first[0] is second[0] and first[1] is second[1]
    assert first[2] is nested and second[2] is not nested  # nested lists are not shared


@pytest.mark.parametrize("dim", [8.0, True])
def test_a_shape_of_a_dim_equal_to_an_int_never_reaches_the_sharing(dim):
    """shared_shapes shares by equality: [8.0] and [True] equal [8] and [1], so it is
    only given checked rows, and the check refuses them: a report's, and the channel's."""
    row = {**real_rows()[0], "input_shapes": [[dim, 16]]}
    with pytest.raises(ValueError, match="row 1: input_shapes"):
        accept_rows([row])
    with pytest.raises(protocol.NotAMessage, match=r"rows\[0\]\.input_shapes"):
        protocol.decode(protocol.encode(protocol.RowsMessage(rows=[row])))


def test_accepted_real_rows_share_their_equal_shapes_and_stay_equal():
    decoded = real_rows()
    copies = real_rows()
    accept_rows(decoded)
    assert decoded == copies
    assert [list(row) for row in decoded] == [list(row) for row in copies]
    by_shape: dict[str, list] = {}
    for row in decoded:
        for shape in row["input_shapes"]:
            if all(type(dim) is int for dim in shape):  # flat shapes: one list each
                by_shape.setdefault(json.dumps(shape), []).append(shape)
    repeated = [shapes for shapes in by_shape.values() if len(shapes) > 1]
    assert repeated and all(len({id(shape) for shape in shapes}) == 1 for shapes in repeated)


def test_accepted_rows_share_their_repeated_times_and_encode_as_before():
    decoded = real_rows()
    text = msgspec.json.encode(decoded)
    accept_rows(decoded)  # call sites and spreads held compact: written as their dicts
    assert msgspec.json.encode(decoded, enc_hook=as_plain) == text
    lone = [row for row in decoded if len(row.get("sites") or ()) == 1]
    assert lone and all(
        row["sites"][0]["cpu_self_seconds"] is row["cpu_self_seconds"]
        and row["sites"][0]["share"] is ONE
        for row in lone
        if row["sites"][0]["cpu_self_seconds"] == row["cpu_self_seconds"]
    )
    leaves = [row for row in decoded if row.get("cpu_total_seconds") == row["cpu_self_seconds"]]
    assert leaves and all(row["cpu_total_seconds"] is row["cpu_self_seconds"] for row in leaves)


@pytest.mark.parametrize(
    ("value", "other", "same"),
    [(1.0, 1.0, True), (0.0, -0.0, False), (-0.0, -0.0, True), (1, 1.0, False),
     (float("nan"), float("nan"), False), (None, 1.0, False)],
)  # fmt: skip
def test_only_floats_written_alike_are_shared(value, other, same):
    assert same_float(value, other) is same


def test_accepted_rows_lists_have_room_for_their_items_alone():
    """A list built by appending keeps room for more (a row's one call site: room for
    four); accepted rows' call sites and shapes lists are their exact size."""
    decoded = real_rows()
    accept_rows(decoded)
    assert decoded == real_rows()
    for row in decoded:
        for items in (row.get("sites"), row["input_shapes"]):
            if items:
                assert sys.getsizeof(items) == sys.getsizeof([None] * len(items))
