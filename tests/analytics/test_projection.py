"""The projection decoder: a stored record pruned to a query's paths reads, at every one of
them, exactly what the whole record reads (values and their order), however the keys cut the path."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.analytics.projection import MAX_PARTS, decoder
from seclake.record.flatten import values_at

RECORD = {
    "@timestamp": 1790899750022,
    "@sender": "FW-01",
    "@message": "x" * 500,
    "@fields": {"action": "deny", "sentbyte": "198", "dstport": 443, "ratio": 0.5, "ok": True, "gone": None,
                "big": {"deep": {"er": 1}}, "tags": ["a", {"b": 2}, None, ["c"]]},
    "@fields.action": "literal dotted key",
    "users": [{"name": "ann"}, {"name": "bob", "roles": ["x", "y"]}, "loose"],
    "n": None,
}
BODY = orjson.dumps(RECORD)


def test_the_pruned_record_reads_as_the_whole_at_every_wanted_path():
    paths = ["@sender", "@fields.action", "@fields.sentbyte", "@fields.big.deep.er", "@fields.tags", "@fields.tags.b",
             "users.name", "users.roles", "n", "@fields.gone", "missing.path", "@fields.ratio", "@fields.ok"]
    pruned = decoder(paths)(BODY)
    for path in paths:
        assert values_at(pruned, path) == values_at(RECORD, path), path
    # What the query does not read is not made: the long message, the other fields.
    assert "@message" not in pruned and "dstport" not in pruned["@fields"]
    assert sorted(values_at(pruned, "@fields.action")) == ["deny", "literal dotted key"]  # both ways of storing it


def test_whole_records_without_paths_and_past_the_parts_bound():
    assert decoder(None)(BODY) == RECORD
    deep = ".".join(["p"] * (MAX_PARTS + 1))
    assert decoder([deep, "@sender"])(BODY) == RECORD  # too many cuts to make types of: whole


def test_a_query_of_many_long_paths_is_decoded_whole_without_making_types_for_them():
    import time

    from seclake.analytics import parse
    from seclake.analytics.projection import MAX_PARTS, MAX_TYPES

    # About as many 8-part paths as the longest query holds (16,384 characters), 255 trie nodes each.
    names = [f"a{i}.b.c.d.e.f.g" for i in range(850)]
    pipeline = parse("| KEEP " + ", ".join(names))
    assert len(pipeline.fields) >= 850 and max(len(p.split(".")) for p in pipeline.fields) == MAX_PARTS
    started = time.perf_counter()
    decode = decoder(pipeline.fields)
    assert time.perf_counter() - started < 0.5 and decode is orjson.loads
    # A handful of long paths still get their types, within the bound.
    few = [f"a{i}.b.c.d" for i in range(MAX_TYPES // 16)]
    assert decoder(few) is not orjson.loads and decoder(few)(b'{"a0": {"b": {"c": {"d": 1}}}, "z": 2}') == \
        {"a0": {"b": {"c": {"d": 1}}}}


def test_what_msgspec_does_not_read_as_an_object_is_decoded_whole():
    assert decoder(["a"])(b"[1, 2]") == [1, 2]
    assert decoder(["a"])(b'{"a": 1, "b": 12345678901234567890}') == {"a": 1}  # past int64, not read


KEYS = st.sampled_from(["a", "b", "a.b", "b.a", "c", "a.b.c", "x"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(KEYS, inner, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(record=st.dictionaries(KEYS, VALUES, max_size=5),
       paths=st.lists(st.sampled_from(["a", "b", "a.b", "a.b.c", "b.a", "c.a.b", "x", "a.x"]), min_size=1, max_size=4))
def test_any_record_and_paths(record, paths):
    body = orjson.dumps(record)
    pruned = decoder(paths)(body)
    whole = orjson.loads(body)
    for path in paths:
        assert values_at(pruned, path) == values_at(whole, path)
