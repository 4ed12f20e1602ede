"""Correlation groups: Sigma's event_count, value_count, temporal and
temporal_ordered over one group's matches, their bounds, and their saved state."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.detect.correlation import Group
from seclake.detect.rule import rule_from_dict
from seclake.detect.ruleset import RuleSet
from seclake.errors import ValidationFailed

S = 1000


def correlation(type_: str, rules=("a", "b"), timespan="1m", **condition):
    corr = {"type": type_, "rules": list(rules), "groupBy": ["host.name"], "timespan": timespan}
    if condition:
        corr["condition"] = condition
    return rule_from_dict({"name": "corr", "behavior": "C", "riskScore": 1, "correlation": corr}).correlation


def run(group: Group, matches, first_seq: int = 1) -> list[tuple[int, int]]:
    """Feed (ts seconds, rule index, value) in order, numbered from ``first_seq``; what fired, as (counted, seq)."""
    out = []
    for seq, (ts, index, value) in enumerate(matches, first_seq):
        got = group.observe(ts * S, index, value, seq)
        if got is not None:
            out.append(got)
    return out


def test_event_count_fires_when_the_sliding_timespan_holds_enough_matches_and_starts_again():
    g = Group(correlation("event_count", gte=3))
    # 3 within a minute fire at the third; the next two alone do not; spread out, never.
    assert run(g, [(0, 0, None), (10, 1, None), (20, 0, None), (30, 0, None), (40, 0, None)]) == [(3, 3)]
    g = Group(correlation("event_count", gte=3))
    assert run(g, [(0, 0, None), (50, 0, None), (100, 0, None), (150, 0, None)]) == []
    g = Group(correlation("event_count", gt=2))
    assert run(g, [(0, 0, None), (1, 0, None), (2, 0, None)]) == [(3, 3)]


def test_value_count_counts_distinct_values_and_ignores_matches_without_the_field():
    g = Group(correlation("value_count", gte=3, field="user.name"))
    got = run(g, [(0, 0, "alice"), (1, 0, "alice"), (2, 0, None), (3, 1, "bob"), (4, 0, "BOB"), (5, 0, "carol")])
    assert got == [(3, 5)]


def test_temporal_needs_every_rule_within_the_timespan_in_any_order():
    g = Group(correlation("temporal", rules=("a", "b", "c")))
    assert run(g, [(0, 2, None), (5, 0, None), (6, 0, None), (30, 1, None)]) == [(3, 4)]
    g = Group(correlation("temporal", rules=("a", "b", "c")))
    assert run(g, [(0, 2, None), (5, 0, None), (70, 1, None)]) == [], "c fell out of the minute before b came"
    g = Group(correlation("temporal", rules=("a", "b", "c"), gte=2))
    assert run(g, [(0, 2, None), (1, 2, None), (5, 0, None)]) == [(2, 3)]


def test_temporal_ordered_needs_the_listed_order_within_the_timespan():
    ordered = correlation("temporal_ordered", rules=("a", "b", "c"))
    assert run(Group(ordered), [(0, 0, None), (10, 1, None), (20, 2, None)]) == [(3, 3)]
    assert run(Group(ordered), [(0, 1, None), (10, 0, None), (20, 2, None)]) == [], "b before a"
    assert run(Group(ordered), [(0, 0, None), (10, 2, None), (20, 1, None)]) == [], "c before b"
    assert run(Group(ordered), [(0, 0, None), (30, 1, None), (61, 2, None)]) == [], "c past the minute from a"
    # A later a restarts the chain in time: a(0) b(10) a(50) b(55) c(100) fits from a(50).
    assert run(Group(ordered), [(0, 0, None), (10, 1, None), (50, 0, None), (55, 1, None), (100, 2, None)]) == [(3, 5)]
    # Logged late but earlier in event time: b's time is before a's, so no order.
    assert run(Group(ordered), [(10, 0, None), (5, 1, None), (20, 2, None)]) == []


def test_conditions_below_a_count_are_judged_when_the_timespan_is_over():
    g = Group(correlation("event_count", lt=3))
    # Two matches in the first minute; nothing is known until a match at or past its end.
    assert run(g, [(0, 0, None), (10, 0, None)]) == []
    assert g.end() == 60 * S
    assert g.observe(60 * S, 0, None, 3) == (2, 2), "the window [0, 60s) held 2 < 3; its last match was #2"
    # The match that closed it opened the next window.
    assert g.end() == 120 * S and g.count == 1
    g = Group(correlation("event_count", lt=3))
    assert run(g, [(0, 0, None), (1, 0, None), (2, 0, None), (61, 0, None)]) == []
    g = Group(correlation("event_count", eq=2))
    assert run(g, [(0, 0, None), (1, 0, None), (61, 0, None)]) == [(2, 2)]
    g = Group(correlation("value_count", lte=1, field="user.name"))
    assert run(g, [(0, 0, "root"), (1, 0, "root"), (61, 0, "x")]) == [(1, 2)]


def test_a_group_is_bounded_whatever_it_is_sent():
    g = Group(correlation("value_count", gte=50, field="f", timespan="1d"))
    for i in range(10_000):
        g.observe(i, 0, f"v{i % 49}", i)  # 49 distinct values: never fires
    assert len(g.to_json()["values"]) == 49
    g = Group(correlation("value_count", lt=5, field="f", timespan="1d"))
    for i in range(10_000):
        g.observe(i, 0, f"v{i}", i)
    assert len(g.to_json()["values"]) <= 6, "judged at the end: more than count+1 values change nothing"
    g = Group(correlation("event_count", gte=100, timespan="1m"))
    for i in range(10_000):
        g.observe(i * 700, 0, None, i)  # one match every 0.7 s: ~86 in a minute
    assert len(g.to_json()["times"]) <= 100


TYPES = st.sampled_from([
    ("event_count", {"gte": 3}), ("event_count", {"lt": 3}), ("event_count", {"neq": 2}),
    ("value_count", {"gte": 2, "field": "f"}), ("value_count", {"eq": 2, "field": "f"}),
    ("temporal", {}), ("temporal_ordered", {}),
])
MATCHES = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 1), st.sampled_from([None, "x", "y", "z"])),
                   max_size=40)


@settings(max_examples=150, deadline=None)
@given(kind=TYPES, matches=MATCHES, cut=st.integers(0, 40))
def test_a_group_saved_and_restored_at_any_point_fires_as_one_never_saved(kind, matches, cut):
    """The detector saves groups between batches and restores them at start:
    that must not change what fires later (streaming = restart = backfill)."""
    c = correlation(kind[0], **kind[1])
    whole = run(Group(c), matches)
    g = Group(c)
    first = run(g, matches[:cut])
    restored = Group.from_json(c, json.loads(json.dumps(g.to_json())))
    # The log's numbering goes on across a restart: a restored window's own numbers stay valid.
    rest = run(restored, matches[cut:], first_seq=min(cut, len(matches)) + 1)
    assert first + rest == whole


def test_saved_state_of_another_definition_starts_empty():
    g = Group(correlation("event_count", gte=3))
    run(g, [(0, 0, None), (1, 0, None)])
    assert Group.from_json(correlation("event_count", gte=4), g.to_json()).is_empty()
    assert Group.from_json(correlation("event_count", gte=3, timespan="2m"), g.to_json()).is_empty()
    assert Group.from_json(correlation("event_count", gte=3), {"v": 1, "type": "event_count"}).is_empty()
    assert not Group.from_json(correlation("event_count", gte=3), g.to_json()).is_empty()


# -- the rule format -----------------------------------------------------------


def rule(name, corr=None, **extra):
    d = {"name": name, "behavior": name.title(), "riskScore": 10, **extra}
    if corr is not None:
        d["correlation"] = corr
    else:
        d.setdefault("query", "event.code:4625")
        d.setdefault("keyField", "host.name")
        d.setdefault("keyType", "host")
    return rule_from_dict(d)


@pytest.mark.parametrize(("corr", "extra", "says"), [
    ({"type": "event_count", "rules": ["a"], "timespan": "5m"}, {}, "correlation.condition: is required"),
    ({"type": "value_count", "rules": ["a"], "timespan": "5m", "condition": {"gte": 2}}, {},
     "condition.field: is required"),
    ({"type": "event_count", "rules": ["a"], "timespan": "5m", "condition": {"gte": 2, "lt": 5}}, {},
     "exactly one of"),
    ({"type": "event_count", "rules": ["a"], "timespan": "5m", "condition": {"gte": 2.5}}, {}, "whole number"),
    ({"type": "event_count", "rules": ["a"], "timespan": "5 fortnights", "condition": {"gte": 2}}, {},
     "is not a timespan"),
    ({"type": "event_count", "rules": ["a"], "timespan": "8d", "condition": {"gte": 2}}, {}, "between 1s and 7d"),
    ({"type": "event_count", "rules": ["c"], "timespan": "5m", "condition": {"gte": 2}}, {}, "the rule itself"),
    ({"type": "temporal_ordered", "rules": ["a", "b"], "timespan": "5m", "condition": {"gte": 1}}, {},
     "every rule, in order"),
    ({"type": "event_count", "rules": ["a"], "timespan": "5m", "condition": {"gte": 2}}, {"query": "x:1"},
     "bucket.query: a correlation rule has none"),
    ({"type": "event_count", "rules": ["a", "b"], "groupBy": ["user"], "timespan": "5m", "condition": {"gte": 2},
      "aliases": {"user": {"a": "user.name"}}}, {}, "names no field for rule b"),
    ({"type": "median", "rules": ["a"], "timespan": "5m", "condition": {"gte": 2}}, {}, "correlation.type"),
])
def test_a_correlation_rule_that_cannot_run_is_refused_saying_where(corr, extra, says):
    with pytest.raises(ValidationFailed) as e:
        rule("c", corr, **extra)
    assert says in str(e.value)


def test_a_correlation_rule_reads_back_as_it_was_written():
    r = rule("c", {"type": "value_count", "rules": ["a", "b"], "groupBy": ["src", "dst"], "timespan": "1w",
                   "condition": {"gte": 5, "field": "user"}, "aliases": {"src": {"a": "source.ip", "b": "ip"}}},
             generate=False)
    d = r.to_dict()
    assert d["correlation"]["timespan"] == "7d" and d["generate"] is False and "query" not in d
    assert rule_from_dict(d) == r
    assert r.correlation.field_of("src", "b") == "ip" and r.correlation.field_of("dst", "b") == "dst"


def test_the_rule_set_feeds_correlations_and_leaves_out_cycles():
    a, b = rule("a"), rule("b", generate=False)
    one = rule("one", {"type": "event_count", "rules": ["a", "b"], "timespan": "5m", "condition": {"gte": 2}})
    two = rule("two", {"type": "temporal", "rules": ["one", "a"], "timespan": "5m"})
    x = rule("x", {"type": "temporal", "rules": ["y", "a"], "timespan": "5m"})
    y = rule("y", {"type": "temporal", "rules": ["x", "b"], "timespan": "5m"})
    rs = RuleSet([a, b, one, two, x, y], 1)
    assert [r.name for r, _ in rs.rules("event")] == ["a", "b"], "a correlation has no selector to match"
    assert [r.name for r in rs.correlations_of("a")] == ["one", "two"]
    assert [r.name for r in rs.correlations_of("one")] == ["two"]
    assert rs.correlations_of("x") == [] and rs.correlations_of("b") == [one]
