"""A row's call sites and per-step spread held compact once accepted
(formats/compact_records.py): read, compared, pickled and written as the dicts they
replace, on a live run's real rows (tests/data/), in less memory."""

from __future__ import annotations

import gc
import json
import math
import pickle
import sys
from pathlib import Path

import msgspec
import pytest

from torchscan_tui.analysis.fields import FIELDS
from torchscan_tui.analysis.step_summary import spread_text
from torchscan_tui.formats.compact_records import (
    CompactSite,
    CompactSpread,
    as_plain,
    compact_spread,
)
from torchscan_tui.formats.export import export_rows
from torchscan_tui.formats.report import dumps_report, load_report, save_report
from torchscan_tui.formats.report_schema import accept_rows, shared_sites
from torchscan_tui.run import protocol

REAL_REPORT = Path(__file__).parent / "data" / "real_report_train_transformer.json"
PER_STEP = "cpu_self_seconds_per_step"


def real_report() -> dict:
    return json.loads(REAL_REPORT.read_text())


def accepted_and_copies() -> tuple[list[dict], list[dict]]:
    rows, copies = real_report()["operators"], real_report()["operators"]
    accept_rows(rows)
    return rows, copies


def test_accepted_real_rows_hold_compact_sites_and_spreads_equal_to_the_dicts():
    rows, copies = accepted_and_copies()
    sites = [site for row in rows for site in row.get("sites") or ()]
    spreads = [row[PER_STEP] for row in rows if PER_STEP in row]
    assert sites and all(type(site) is CompactSite for site in sites)
    assert any("stack" in site for site in sites) and any("stack" not in site for site in sites)
    assert spreads and all(type(spread) is CompactSpread for spread in spreads)
    assert rows == copies and copies == rows  # either side of ==
    for row, copy in zip(rows, copies, strict=True):
        for site, plain in zip(row.get("sites") or (), copy.get("sites") or (), strict=True):
            assert list(site) == list(plain) and dict(site) == plain and len(site) == len(plain)
            assert site.get("stack") == plain.get("stack") and ("stack" in site) == (
                "stack" in plain
            )
        if PER_STEP in row:
            spread = row[PER_STEP]
            assert list(spread.items()) == list(copy[PER_STEP].items())
            assert spread["median"] == copy[PER_STEP]["median"] and spread.get("nope") is None
            assert spread_text(row) == spread_text(copy) is not None
        assert FIELDS["sites"].text(row.get("sites")) == FIELDS["sites"].text(copy.get("sites"))


def test_compact_records_are_written_as_the_same_json_by_every_writer(tmp_path):
    report = real_report()
    expected = dumps_report(report)
    accept_rows(report["operators"])
    assert dumps_report(report) == expected
    plain = real_report()["operators"]
    assert msgspec.json.encode(report["operators"], enc_hook=as_plain) == msgspec.json.encode(plain)
    assert json.dumps(report["operators"], default=as_plain) == json.dumps(plain)
    save_report(report, tmp_path / "saved.json")
    assert (tmp_path / "saved.json").read_text() == expected
    reopened = load_report(tmp_path / "saved.json")
    assert reopened["operators"] == plain
    export_rows(report["operators"], tmp_path / "rows.json")
    export_rows(plain, tmp_path / "plain.json")
    assert (tmp_path / "rows.json").read_text() == (tmp_path / "plain.json").read_text()


def test_rows_with_compact_records_travel_on_the_channel_as_the_dicts():
    rows, copies = accepted_and_copies()
    message = protocol.RowsMessage(rows=rows[:20])
    line = protocol.encode(message)
    assert line == protocol.encode(protocol.RowsMessage(rows=copies[:20]))
    assert protocol.decode(line).rows == copies[:20]


def test_the_channel_decodes_sites_and_spreads_straight_into_shared_compact_records():
    """The channel's rows are decoded as ReceivedRow (no dict made per site or spread),
    then shared as accepted rows are: the same records, the same text objects, a lone
    site's time the row's own float, its share the one 1.0."""
    rows, copies = accepted_and_copies()
    received = protocol.decode(protocol.encode(protocol.RowsMessage(rows=copies))).rows
    assert received == rows == copies
    for got, accepted in zip(received, rows, strict=True):
        got_sites, accepted_sites = got.get("sites") or [], accepted.get("sites") or []
        assert [type(site) for site in got_sites] == [type(s) for s in accepted_sites]
        assert all(type(site) is CompactSite for site in got_sites)
        for site, same in zip(got_sites, accepted_sites, strict=True):
            assert site.site is same.site and site.stack is same.stack  # interned alike
            assert site.share is same.share or site.share != 1.0
        if len(got_sites) == 1:
            assert got_sites[0].cpu_self_seconds is got["cpu_self_seconds"]
        assert type(got.get(PER_STEP)) is type(accepted.get(PER_STEP))
    assert sum(PER_STEP in row for row in received) > 0


def test_a_spread_of_a_step_count_past_64_bits_arrives_as_its_dict():
    row = {**real_report()["operators"][0]}
    row[PER_STEP] = {"mean": 1.0, "min": 1.0, "median": 1.0, "max": 1.0, "steps": 2**70}
    (got,) = protocol.decode(protocol.encode(protocol.RowsMessage(rows=[row]))).rows
    assert type(got[PER_STEP]) is dict and got[PER_STEP] == row[PER_STEP]


def test_compact_records_pickle_as_themselves():
    rows, copies = accepted_and_copies()
    again = pickle.loads(pickle.dumps(rows))
    assert again == copies
    assert type(again[0]["sites"][0]) is CompactSite and type(again[0][PER_STEP]) is CompactSpread


def test_compact_records_cannot_be_changed():
    rows, _ = accepted_and_copies()
    with pytest.raises(TypeError):
        rows[0]["sites"][0]["share"] = 0.5  # type: ignore[index]
    with pytest.raises(TypeError):
        rows[0][PER_STEP]["steps"] = 3  # type: ignore[index]


@pytest.mark.parametrize(
    "odd",
    [
        {"site": "a.py(1): f", "cpu_self_seconds": 1.0, "share": 1.0, "line": 3},  # a new key
        {"cpu_self_seconds": 1.0, "site": "a.py(1): f", "share": 1.0},  # another order
        {"site": "a.py(1): f", "cpu_self_seconds": 1.0, "share": 1.0, "stack": "s", "x": 1},
    ],
)
def test_a_site_of_other_keys_stays_the_dict_it_was(odd):
    assert shared_sites([odd], None)[0] is odd


@pytest.mark.parametrize(
    "odd",
    [
        {"mean": 1.0, "min": 1.0, "median": 1.0, "max": 1.0, "steps": 2, "p90": 1.0},
        {"min": 1.0, "mean": 1.0, "median": 1.0, "max": 1.0, "steps": 2},
        {"mean": 1.0, "median": 1.0, "max": 1.0, "steps": 2},
    ],
)
def test_a_spread_of_other_keys_stays_the_dict_it_was(odd):
    assert compact_spread(odd) is odd


@pytest.mark.parametrize(
    "odd",
    [
        {"mean": 1, "min": 1.0, "median": 1.0, "max": 1.0, "steps": 2},  # an int figure
        {"mean": 1.0, "min": 1.0, "median": 1.0, "max": 1.0, "steps": 2.0},
        {"mean": 1.0, "min": 1.0, "median": 1.0, "max": 1.0, "steps": True},
        {"min": math.nan, "median": 1.0, "max": 1.0, "steps": 2},  # not equal to itself
        {"mean": 1.0, "min": 1.0, "median": 1.0, "max": 1.0, "steps": 2**70},
    ],
)
def test_a_spread_that_would_not_pack_exactly_stays_the_dict_it_was(odd):
    assert compact_spread(odd) is odd


@pytest.mark.parametrize(
    "plain",
    [
        {"site": "a.py(1): f", "cpu_self_seconds": 1, "share": None},  # an int time
        {"site": "b.py(2): g", "cpu_self_seconds": 0.25, "share": 0.5, "stack": "b.py(2): g;c"},
        {
            "mean": 0.1 + 0.2,
            "min": -0.0,
            "median": 5e-324,
            "max": 1.7976931348623157e308,
            "steps": 7,
        },  # fmt: skip
        {"min": 0.1 + 0.2, "median": 1.0, "max": 2.0, "steps": 3},
    ],
)
def test_a_compact_record_holds_its_values_exactly_and_writes_them_the_same(plain):
    if "site" in plain:
        (made,) = shared_sites([dict(plain)], None)
    else:
        made = compact_spread(dict(plain))
    assert type(made) in (CompactSite, CompactSpread)
    assert made == plain and list(made) == list(plain) and len(made) == len(plain)
    assert all(repr(made[key]) == repr(value) for key, value in plain.items())
    assert json.dumps(made, default=as_plain) == json.dumps(plain)
    assert msgspec.json.encode(made, enc_hook=as_plain) == msgspec.json.encode(plain)
    assert made.get("nope") is None and "nope" not in made
    with pytest.raises(KeyError):
        made["nope"]


def test_a_nan_in_a_compact_record_is_written_as_null_as_in_a_dict(tmp_path):
    """Only the stdlib reads NaN from a file; a report never holds one (finite)."""
    report = real_report()
    report["operators"] = report["operators"][:3]
    report["operators"][0]["sites"][0]["cpu_self_seconds"] = math.nan
    report["operators"][1][PER_STEP]["max"] = math.inf
    plain = dumps_report(report)
    accept_rows(report["operators"])
    assert type(report["operators"][0]["sites"][0]) is CompactSite
    assert dumps_report(report) == plain and "NaN" not in plain and "Infinity" not in plain


def test_compact_call_sites_are_not_tracked_by_the_collector():
    """A Python class's instances all are (126k sites at 100k rows)."""
    rows, _ = accepted_and_copies()
    assert not gc.is_tracked(rows[0]["sites"][0])


def test_a_compact_record_is_smaller_than_the_dict_it_replaces():
    rows, copies = accepted_and_copies()
    row, copy = next((r, c) for r, c in zip(rows, copies, strict=True) if r.get("sites"))
    assert sys.getsizeof(row["sites"][0]) < sys.getsizeof(copy["sites"][0]) / 3
    spread, plain_spread = row[PER_STEP], copy[PER_STEP]
    held = sys.getsizeof(spread) + sys.getsizeof(spread._packed)
    assert held < (sys.getsizeof(plain_spread) + 4 * sys.getsizeof(1.0)) / 2
