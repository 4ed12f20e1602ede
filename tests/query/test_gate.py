"""Gates: a record a query matches always passes the query's gate, so rules
turned away by their gate (detect/detector.py) would not have matched."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.detect.rulebook import read_rule_files, starter_pack
from seclake.query import ast
from seclake.query.gate import Gate, gate_of
from seclake.query.matcher import RecordView, compile_matcher
from seclake.query.parser import parse
from seclake.record.dataset import EVENTS
from tests.query.test_properties import records, trees


@settings(max_examples=500, deadline=None)
@given(node=trees, recs=st.lists(records(), min_size=1, max_size=12))
def test_a_record_the_query_matches_passes_its_gate(node, recs):
    gate = gate_of(node, EVENTS)
    if gate is None:
        return
    test = compile_matcher(node, EVENTS)
    for record in recs:
        if test(record):
            assert gate.admits(RecordView(record, EVENTS)), (node, gate, record)


def test_the_gate_of_a_query_is_its_first_keyword_term_or_one_field_of_alternatives():
    def gate(text: str) -> Gate | None:
        return gate_of(parse(text, EVENTS, default_operator="AND"), EVENTS)

    assert gate("action:Deny AND user:bob") == Gate("@fields.action", frozenset({"deny"}))
    assert gate("dport:>1000 AND action:deny") == Gate("@fields.action", frozenset({"deny"}))
    assert gate("action:(deny OR drop)") == Gate("@fields.action", frozenset({"deny", "drop"}))
    assert gate("dport:0443") == Gate("@fields.dport", frozenset({"443"}))  # the keyword, as terms match it
    for none in ("action:deny OR user:bob", "NOT action:deny", "action:de*", "failed password",
                 "@message:denied", "dport:[1 TO 5]"):
        assert gate(none) is None, none
    assert gate_of(ast.MatchAll(), EVENTS) is None


def test_most_starter_rules_have_a_gate():
    rules, errors = read_rule_files(starter_pack())
    assert not errors
    gates = {r.name: gate_of(r.selector, r.data) for r in rules}
    assert gates["brute-force-user"] == gates["brute-force-source"] == Gate(
        "@fields.event.category", frozenset({"authentication"}))
    assert gates["known-bad-domain"] == Gate(
        "@fields.query", frozenset({"update-check.badcorp-cdn.top", "k3x9q2.badcorp-relay.su"}))
    assert gates["credential-dumping"] is None  # patterns only
    event_rules = [name for name, g in gates.items() if next(r for r in rules if r.name == name).dataset == "event"]
    assert sum(gates[name] is not None for name in event_rules) >= len(event_rules) - 2
