"""Properties: the parser never crashes, and the matcher obeys boolean logic."""

from __future__ import annotations

import ipaddress
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seclake.errors import LimitExceeded, QueryError
from seclake.query import ast
from seclake.query.echo import highlight_terms, to_dict
from seclake.query.matcher import compile_matcher, matches
from seclake.query.parser import parse
from seclake.record.dataset import BEHAVIORS, EVENTS, SUMMARIES

NOW = 1_700_000_000_000

FRAGMENTS = [
    "a", "Admin", "deny", "443", "007", "AND", "OR", "NOT", "TO", "&&", "||", "!", "(", ")", "[", "]",
    "{", "}", '"', "'", "/", "\\", ":", "*", "?", "~", "^", "+", "-", "<", ">", "=", ">=", "@timestamp",
    "user", "dport", "@message", "sip", "now-1d/d", "now", "2023-11-14", "10.0.0.0/8", "_exists_", "@",
    "#", "&", "|", ".", "1", "é", " ", " ", "\t", "\n", "2001:db8::/32", "comments.username", "*:*",
]

query_strings = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join),
    st.lists(st.sampled_from(FRAGMENTS), max_size=14).map(" ".join),
    st.text(max_size=40),
)


def _simplified(node: ast.Node) -> bool:
    if isinstance(node, (ast.And, ast.Or)):
        kind = type(node)
        return (
            len(node.children) >= 2
            and not any(isinstance(c, (kind, ast.MatchAll, ast.MatchNone)) for c in node.children)
            and all(_simplified(c) for c in node.children)
        )
    if isinstance(node, ast.Not):
        return not isinstance(node.child, (ast.Not, ast.MatchAll, ast.MatchNone)) and _simplified(node.child)
    return True


SAMPLE = {
    "@message": "Failed password for Admin from 10.1.2.3",
    "@timestamp": NOW,
    "@fields": {"user": ["admin", "Bob"], "dport": "443", "sip": "10.9.8.7", "x": {"y": 0}},
    "comments": [{"username": "a", "createdOn": NOW}],
    "description": "deny 007",
}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=query_strings, op=st.sampled_from(["AND", "OR"]), dataset=st.sampled_from([EVENTS, SUMMARIES, BEHAVIORS]))
def test_parser_never_crashes(query, op, dataset):
    try:
        node = parse(query, dataset, default_operator=op, now_ms=NOW)
    except QueryError as exc:
        assert exc.position is None or 0 <= exc.position <= len(query)
        return
    except LimitExceeded:
        return
    assert _simplified(node)
    json.dumps(to_dict(node, dataset))
    highlight_terms(node)
    assert isinstance(matches(node, SAMPLE, dataset), bool)


# -- matcher invariants over random trees and records ------------------------

WORDS = ["deny", "Deny", "admin", "Administrator", "quarantined", "unquarantined", "mimikatz.exe", "", "443",
         "007", "7", "10.1.2.3", "2001:db8::1", "::ffff:10.9.9.9", "failed password"]
NUMBERS = [0, 7, 22, 443, 443.0, -5, 1e6, "443", "22", "7", "007", "x443", True]
scalar = st.one_of(st.sampled_from(WORDS), st.sampled_from(NUMBERS))


@st.composite
def records(draw):
    fields = {}
    for name in ("action", "dport", "user", "sip"):
        if draw(st.booleans()):
            fields[name] = draw(st.one_of(scalar, st.lists(scalar, max_size=3), st.none()))
    rec = {
        "@timestamp": NOW + draw(st.integers(-3, 3)) * 1000,
        "@message": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=5))),
        "@fields": fields,
    }
    if draw(st.booleans()):
        rec["@tags"] = draw(st.lists(st.sampled_from(WORDS), max_size=3))
    return rec


PATHS = ["@fields.action", "@fields.dport", "@fields.user", "@fields.sip", "@tags", "@message", None]
KEYWORD_PATHS = [p for p in PATHS if p not in (None, "@message")]

leaf = st.one_of(
    st.builds(ast.Term, st.sampled_from(PATHS), st.sampled_from(WORDS + ["443", "7", "0"])),
    st.builds(ast.Wildcard, st.sampled_from(PATHS), st.sampled_from(["adm*", "*min*", "d?ny", "4*", "*"])),
    st.builds(ast.Regex, st.sampled_from(PATHS), st.sampled_from(["adm(?s:.)*", "[0-9]+", "d[a-z]ny"])),
    st.builds(
        ast.Range,
        st.sampled_from(KEYWORD_PATHS),
        st.sampled_from([None, 0, 7, 22]),
        st.sampled_from([None, 22, 443, 1000]),
        st.booleans(),
        st.booleans(),
        st.just("number"),
    ),
    st.builds(ast.Exists, st.sampled_from(["@fields", "@fields.user", "@tags", "@fields.sip"])),
    st.builds(ast.Cidr, st.just("@fields.sip"), st.sampled_from([ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("2001:db8::/32")])),
    st.just(ast.MatchAll()),
    st.just(ast.MatchNone()),
)

trees = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.builds(lambda cs: ast.And(tuple(cs)), st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda cs: ast.Or(tuple(cs)), st.lists(inner, min_size=1, max_size=3)),
        st.builds(ast.Not, inner),
    ),
    max_leaves=8,
)


def _ids(node, recs):
    test = compile_matcher(node, EVENTS)
    return {i for i, r in enumerate(recs) if test(r)}


@settings(max_examples=300, deadline=None)
@given(a=trees, b=trees, recs=st.lists(records(), min_size=1, max_size=12))
def test_boolean_laws(a, b, recs):
    ids_a, ids_b = _ids(a, recs), _ids(b, recs)
    everything = set(range(len(recs)))
    assert _ids(ast.Not(ast.Not(a)), recs) == ids_a
    assert _ids(ast.Not(a), recs) == everything - ids_a
    assert _ids(ast.And((a, b)), recs) == ids_a & ids_b
    assert _ids(ast.Or((a, b)), recs) == ids_a | ids_b
    # De Morgan
    assert _ids(ast.Not(ast.And((a, b))), recs) == _ids(ast.Or((ast.Not(a), ast.Not(b))), recs)
    assert _ids(ast.Not(ast.Or((a, b))), recs) == _ids(ast.And((ast.Not(a), ast.Not(b))), recs)


@settings(max_examples=300, deadline=None)
@given(a=trees, b=trees, recs=st.lists(records(), min_size=1, max_size=12))
def test_simplification_keeps_meaning(a, b, recs):
    assert _ids(ast.and_(a, b), recs) == _ids(ast.And((a, b)), recs)
    assert _ids(ast.or_(a, b), recs) == _ids(ast.Or((a, b)), recs)
    assert _ids(ast.not_(a), recs) == _ids(ast.Not(a), recs)


# -- the same laws through the query language ----------------------------------

ATOMS = [
    "admin", "deny", "user:admin", "user:adm*", "action:deny", "dport:443", "dport:[1 TO 100]",
    "dport:>=443", "sip:\"10.0.0.0/8\"", "_exists_:user", "@tags:*", "\"failed password\"", "mimikatz.exe",
    "user:/adm.*/", "@message:quarantined", "dport:007", "user:\"\"",
]


@st.composite
def queries(draw, depth=2):
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(ATOMS))
    left = draw(queries(depth=depth - 1))
    right = draw(queries(depth=depth - 1))
    return draw(st.sampled_from([f"({left}) AND ({right})", f"({left}) OR ({right})", f"NOT ({left})",
                                 f"({left}) ({right})", f"({left}) && !({right})"]))


@settings(max_examples=300, deadline=None)
@given(qa=queries(), qb=queries(), recs=st.lists(records(), min_size=1, max_size=12))
def test_query_language_laws(qa, qb, recs):
    def ids(q):
        return _ids(parse(q, EVENTS, now_ms=NOW), recs)

    ids_a, ids_b = ids(qa), ids(qb)
    assert ids(f"({qa}) AND ({qb})") <= ids_a
    assert ids(f"({qa}) AND ({qb})") == ids(f"({qa}) ({qb})") == ids(f"({qa}) && ({qb})") == ids_a & ids_b
    assert ids(f"({qa}) OR ({qb})") == ids(f"({qa}) || ({qb})") == ids_a | ids_b
    assert ids(f"NOT ({qa})") == ids(f"!({qa})") == ids(f"-({qa})") == set(range(len(recs))) - ids_a
    assert ids(f"NOT NOT ({qa})") == ids_a
