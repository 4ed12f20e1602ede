"""Each split records the @customer values of its records, as the query matcher sees them."""

import json

import pytest

from seclake.storage import customers as cust
from seclake.storage import merge
from seclake.storage.catalog import PUBLISHED
from seclake.storage.customers import CustomerSet, signature
from seclake.storage.split import META_FILE, Split

DAY0 = 1_763_683_200_000


def _set(*records):
    s = CustomerSet()
    for r in records:
        s.add(r)
    return s.customers


@pytest.mark.parametrize(
    "record, sig",
    [
        ({}, "[]"),
        ({"@customer": None}, "[]"),  # null is absent, as for the matcher
        ({"@customer": []}, "[]"),
        ({"@customer": "Acme"}, '["Acme"]'),
        ({"@customer": 7}, "[7]"),
        ({"@customer": 7.5}, "[7.5]"),
        ({"@customer": True}, "[true]"),
        ({"@customer": ["b", "a", "b", None, ["c"]]}, '["a","b","c"]'),
    ],
)
def test_a_signature_is_the_records_distinct_customer_values(record, sig):
    assert signature(record) == sig


def test_true_and_one_and_one_point_oh_stay_apart():
    # They index differently ("true" is no number): one set must keep all three.
    assert _set({"@customer": True}, {"@customer": 1}, {"@customer": 1.0}) == ("[1.0]", "[1]", "[true]")


@pytest.mark.parametrize(
    "record",
    [
        {"@customer": {"name": "acme"}},  # an object: paths below @customer
        {"@customer.name": "acme"},  # a dotted key: the same path
        {"@customer": "x" * (cust.MAX_VALUE_CHARS + 1)},
        {"@customer": ["x" * (cust.MAX_VALUE_CHARS + 1)]},
        {"@customer": 2**70},  # past what JSON text of the set can hold
        {"@customer": float("inf")},
        {"@customer": "\ud800"},
    ],
)
def test_what_a_signature_cannot_say_makes_the_set_unknown(record):
    assert _set({"@customer": "acme"}, record, {"@customer": "globex"}) is None


def test_past_the_cap_the_set_is_unknown():
    assert len(_set(*({"@customer": f"c{i}"} for i in range(cust.MAX_CUSTOMERS)))) == cust.MAX_CUSTOMERS
    assert _set(*({"@customer": f"c{i}"} for i in range(cust.MAX_CUSTOMERS + 1))) is None


def _event(i, customer=None):
    rec = {"@timestamp": DAY0 + i, "@message": f"event {i}"}
    if customer is not None:
        rec["@customer"] = customer
    return rec


def test_splits_and_catalog_entries_carry_the_set_across_a_restart(lake_factory, monkeypatch):
    lake = lake_factory()
    lake.append([("event", _event(1, "acme")), ("event", _event(2, ["ACME", "globex"])), ("event", _event(3))])
    lake.flush()
    lake.stop()
    again = lake_factory()
    (split,) = again.splits("event")
    assert split.meta.customers == ('["ACME","globex"]', '["acme"]', "[]")
    (entry,) = again.catalog.entries(PUBLISHED, "event")
    assert entry.customers == split.meta.customers


def test_a_split_written_before_customers_were_recorded_is_unknown(lake_factory):
    lake = lake_factory()
    lake.append([("event", _event(1, "acme"))])
    lake.flush()
    (split,) = lake.splits("event")
    meta = json.loads((split.path / META_FILE).read_text())
    del meta["customers"]
    (split.path / META_FILE).write_text(json.dumps(meta))
    assert Split(split.path).meta.customers is None


def test_merged_splits_carry_the_union_or_unknown_past_the_cap(lake_factory, monkeypatch):
    monkeypatch.setattr(merge, "SETTLE_MS", 0)  # the day is quiet at once: merged into one split
    lake = lake_factory()
    for customers in (("acme", None), (["acme", "initech"], "acme")):
        lake.append([("event", _event(1, c)) for c in customers])
        lake.flush()
    assert lake.merge() == 1
    (split,) = lake.splits("event")
    assert split.meta.customers == ('["acme","initech"]', '["acme"]', "[]")
    assert lake.catalog.entries(PUBLISHED, "event")[0].customers == split.meta.customers

    half = cust.MAX_CUSTOMERS // 2 + 1
    for part in range(2):
        lake.append([("event", _event(i, f"p{part}-{i}")) for i in range(half)])
        lake.flush()
    lake.merge()
    (merged,) = lake.splits("event")
    assert merged.meta.num_records == 4 + 2 * half
    assert merged.meta.customers is None
    assert lake.catalog.entries(PUBLISHED, "event")[0].customers is None
