"""Leaves of nested records, and the lookup of one path's values."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.record.flatten import MAX_DEPTH, leaves, values_at

# Keys with dots, empty keys and keys that are prefixes of each other: the
# ways one dotted path can be reached.
KEYS = st.sampled_from(["a", "b", "a.b", "b.a", "", "a.", ".b", "ab"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text("ab.", max_size=3))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
                      max_leaves=20)


def _typed(values) -> Counter:
    # True == 1 == 1.0: count each value with its class.
    return Counter((v.__class__, v) for v in values)


def _deep(depth: int) -> dict:
    node: dict = {"a": "leaf"}
    for _ in range(depth):
        node = {"a": node, "b": [node]}
    return node


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=5))
def test_values_at_a_path_are_the_leaves_at_that_path(record):
    paths = {p for p, _ in leaves(record)} | {"a", "a.b", "a.b.a", "zz", "a..b"}
    for path in paths:
        assert _typed(values_at(record, path)) == _typed(v for p, v in leaves(record) if p == path), path


def test_values_past_the_depth_limit_are_cut_as_leaves_cuts_them():
    for depth in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):
        record = _deep(depth)
        for path in {p for p, _ in leaves(_deep(MAX_DEPTH + 2))}:
            assert _typed(values_at(record, path)) == _typed(v for p, v in leaves(record) if p == path), (depth, path)
    assert values_at(_deep(MAX_DEPTH + 1), "a." * (MAX_DEPTH + 1) + "a") == []  # too deep to be indexed
