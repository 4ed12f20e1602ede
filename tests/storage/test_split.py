"""Writing one split: complete at its place, or nothing there at all."""

from __future__ import annotations

import ipaddress
import itertools
from concurrent.futures import ThreadPoolExecutor

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from seclake.query import ast
from seclake.query.matcher import matches
from seclake.record.dataset import EVENTS
from seclake.record.flatten import leaves
from seclake.record.value import as_ip, ip_text, scalar_text, tokens
from seclake.search.plan import SearchPlan
from seclake.search.root import Root
from seclake.storage import document
from seclake.storage.split import STOP_CHECK_RECORDS, Split, SplitAborted, StoredRecord, write_split
from seclake.storage.wal import encoded

T0 = 1_763_683_200_000
RECORDS = STOP_CHECK_RECORDS + 500  # two looks at ``stop`` while documents are made, two while they are added


def _records(n: int):
    return [StoredRecord(i, {"@timestamp": T0 + i, "@message": f"event {i}", "@fields": {"n": i}}) for i in range(1, n + 1)]


def _stop_at_look(look: int):
    """A ``stop`` that answers true from its ``look``-th call on (1-based)."""
    calls = itertools.count(1)
    return lambda: next(calls) >= look


@pytest.mark.parametrize("look", [1, 2, 3, 4], ids=["at-once", "making-documents", "adding-first", "adding-later"])
def test_a_write_told_to_stop_leaves_neither_split_nor_staging(tmp_path, look):
    dest = tmp_path / "s1"
    with pytest.raises(SplitAborted):
        write_split(_records(RECORDS), EVENTS, dest, "s1", stop=_stop_at_look(look))
    assert list(tmp_path.iterdir()) == []
    # The same place takes the split afterwards, whole.
    meta = write_split(_records(RECORDS), EVENTS, dest, "s1", stop=lambda: False)
    assert meta.num_records == RECORDS
    assert [r.docid for r in Split(dest).all_records()] == list(range(1, RECORDS + 1))



def test_records_whose_time_the_index_cannot_hold_are_written_with_time_zero_not_failing_the_split(tmp_path):
    # The index's time is a 64-bit integer: an infinite, NaN or too large
    # time (a summary or a record written by an older build) made the whole
    # split fail, and with it every flush of the records pending with it.
    odd = [float("inf"), float("-inf"), float("nan"), 2**63, 1e300]
    records = [StoredRecord(i, {"@timestamp": t, "@message": f"odd {i}"}) for i, t in enumerate(odd, start=1)]
    records.append(StoredRecord(len(odd) + 1, {"@timestamp": T0, "@message": "plain"}))
    meta = write_split(records, EVENTS, tmp_path / "s1", "s1")
    split = Split(tmp_path / "s1")
    assert meta.num_records == len(odd) + 1
    assert [r.docid for r in split.all_records()] == list(range(1, len(odd) + 2))
    assert (meta.time_min, meta.time_max) == (0, T0)


# -- hostile values (issue 39) -------------------------------------------------
# Every kind of value a sender can put in any field, in every typed column's
# way: a value a column cannot hold must never fail the split's build.

HOSTILE = st.one_of(
    st.sampled_from([
        # addresses and near misses: zones, brackets, ports, blocks
        "fe80::80ac:4126:fa58:1b81%10", "fe80::1%eth0", "fe80::1%", "fe80::1%\x00", "fe80::1%%", "[::1]", "[::1]:443",
        "10.0.0.1:443", "::ffff:1.2.3.4", "1.2.3.4%1", "2001:db8::1/64", "10.0.0.1", "2001:db8::1", "::", "0.0.0.0",
        # numbers as strings
        "443", "007", "-0", "-0.0", "1e400", "-1e400", "1e308", "NaN", "inf", "-Infinity", "0x10", "1_000", "5e-324",
        # strings of every sort
        "", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "Ünïcode ा ✓", "true", "null", "a.b", "\\", "\"",
        "x" * 70_000, "word " * 3_000,
    ]),
    st.sampled_from([True, False, None, 0, -0.0, 5e-324, 1e308, -1e308, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1,
                     -(2**63), 2**64, 10**400, float("nan"), float("inf"), float("-inf")]),
    st.text(max_size=12),
    st.integers(),
    st.floats(),
)
HOSTILE_KEYS = st.sampled_from(["ip", "n", "msg", "@message", "@timestamp", "@customer", "a.b", "", "\x00", "é", "x"])
HOSTILE_VALUES = st.recursive(
    HOSTILE,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(HOSTILE_KEYS, inner, max_size=3)),
    max_leaves=12,
)


def _deep(depth: int) -> dict:
    node: dict = {"leaf": "bottom"}
    for _ in range(depth):
        node = {"d": [node]}
    return node


@st.composite
def hostile_records(draw) -> dict:
    record = draw(st.dictionaries(HOSTILE_KEYS, HOSTILE_VALUES, max_size=6))
    if draw(st.integers(0, 9)) == 0:
        record["deep"] = _deep(draw(st.integers(10, 200)))
    return record


_hostile_ids = itertools.count(1)
TANTIVY_MAX_TOKEN = 65_530


def _as_the_lake_holds(source: dict) -> StoredRecord | None:
    """The record as a build reads it back from the log, or None where the log
    refuses it (a lone surrogate, an int past 64 bits): such an import fails
    before it is acknowledged, so no build meets it."""
    try:
        body = encoded(source)
    except (TypeError, orjson.JSONEncodeError):
        return None
    return StoredRecord(0, orjson.loads(body), body)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(hostile_records(), min_size=1, max_size=8), st.sampled_from([3, 2, 1]))
def test_hostile_values_in_every_field_never_fail_a_build_and_every_record_is_found(tmp_path_factory, sources, version):
    held = [r for r in map(_as_the_lake_holds, sources) if r is not None]
    assume(held)
    records = [StoredRecord(i, r.source, r.body) for i, r in enumerate(held, start=1)]
    split_id = f"hostile{next(_hostile_ids)}"  # compiled queries are kept by split id
    dest = tmp_path_factory.mktemp("hostile") / split_id
    meta = write_split(records, EVENTS, dest, split_id, version=version)
    split = Split(dest)
    assert meta.num_records == len(records)
    assert split.bodies_of([r.docid for r in records]) == {r.docid: r.body for r in records}
    # Every record is found by its values' terms, exactly as the matcher finds it;
    # every address by its block.
    queries = []
    for r in records:
        # The time field is the ``ts`` column's (a value that is no time there is 0: above).
        for path, value in [leaf for leaf in leaves(r.source) if leaf[0] != EVENTS.time_field][:6]:
            text = scalar_text(value)
            # tantivy drops a word past 65,530 bytes from a text field (the
            # record stays, found by its other values and its docId).
            if not (EVENTS.is_text(path) and any(len(t.encode()) > TANTIVY_MAX_TOKEN for t in tokens(text))):
                queries.append(ast.Term(path, text))
            ip = as_ip(value)
            if ip is not None and not EVENTS.is_text(path):  # text fields (the message) have no address column
                block = ipaddress.IPv4Network if ip.version == 4 else ipaddress.IPv6Network
                queries.append(ast.Cidr(path, block((int(ip), ip.max_prefixlen))))
    with ThreadPoolExecutor(1) as pool:
        root = Root(lambda _dataset, _lo, _hi: [split], pool)
        for q in queries:
            res = root.search(SearchPlan(dataset="event", query=q, limit=len(records)))
            want = {r.docid for r in records if matches(q, r.source, EVENTS)}
            assert {h.docid for h in res.hits} == want, q


def test_a_value_its_column_refuses_costs_the_record_its_columns_only(tmp_path, monkeypatch):
    # As an IPv6 zone id did before issue 39: classification let through a
    # value tantivy's address column refuses, and the whole split failed.
    # Whatever the next such value is, its record alone loses its columns.
    monkeypatch.setattr(document, "ip_text", lambda value: value if isinstance(value, str) and "%" in value else ip_text(value))
    records = [StoredRecord(1, {"@timestamp": T0, "ip": "fe80::1%10", "n": 5}),
               StoredRecord(2, {"@timestamp": T0, "ip": "10.0.0.7", "n": 6})]
    meta = write_split(records, EVENTS, tmp_path / "s1", "s1")
    assert [docid for docid, _why in meta.refused] == [1]
    assert "fe80::1%10" in meta.refused[0][1]
    split = Split(tmp_path / "s1")
    with ThreadPoolExecutor(1) as pool:
        root = Root(lambda _dataset, _lo, _hi: [split], pool)

        def found(q: ast.Node) -> list[int]:
            return sorted(h.docid for h in root.search(SearchPlan(dataset="event", query=q, limit=5)).hits)

        assert found(ast.Term("ip", "fe80::1%10")) == [1]  # its terms are there
        assert found(ast.Cidr("ip", ipaddress.ip_network("10.0.0.0/8"))) == [2]  # the others' columns too
        assert found(ast.Range("n", 0, 10, True, True, "number")) == [2]
