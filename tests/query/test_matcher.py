"""Matcher details the golden cases do not pin down."""

from __future__ import annotations

import ipaddress
import re
import time
from unittest.mock import patch

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from seclake.query import ast, matcher
from seclake.query.matcher import compile_matcher, matches
from seclake.query.parser import parse
from seclake.record.dataset import EVENTS, SUMMARIES


def test_dates_stored_as_iso_text_compare_as_dates():
    node = parse("@timestamp:[2023-11-14 TO 2023-11-14]", EVENTS)
    assert matches(node, {"@timestamp": "2023-11-14T10:00:00Z"}, EVENTS)
    assert not matches(node, {"@timestamp": "2023-11-15T00:00:00Z"}, EVENTS)
    assert not matches(node, {"@timestamp": "soon"}, EVENTS)


def test_exists_ignores_nulls_and_empty_containers():
    node = ast.Exists("@fields")
    assert not matches(node, {"@fields": {"a": None, "b": [], "c": {}}}, EVENTS)
    assert matches(node, {"@fields": {"a": None, "b": [None, {"x": ""}]}}, EVENTS)
    assert matches(ast.Exists("@fields.b.x"), {"@fields": {"b": [{"y": 1}, {"x": 0}]}}, EVENTS)
    assert matches(ast.Exists("@fields.a.b"), {"@fields": {"a.b": False}}, EVENTS)


def test_keys_with_dots_are_reachable():
    assert matches(parse("a.b:x", EVENTS), {"@fields": {"a.b": "X"}}, EVENTS)


def test_arrays_of_objects_match_per_element_value():
    node = parse("comments.username:bob AND comments.createdOn:>=5", SUMMARIES)
    # Any element may satisfy each clause (no per-object nesting), as in Elasticsearch objects.
    assert matches(node, {"comments": [{"username": "bob", "createdOn": 1}, {"username": "x", "createdOn": 9}]},
                   SUMMARIES)


def test_big_integers_compare_exactly():
    node = ast.Range("@fields.n", 2**53 + 1, None, True, True, "number")
    assert matches(node, {"@fields": {"n": 2**53 + 1}}, EVENTS)
    assert not matches(node, {"@fields": {"n": 2**53}}, EVENTS)


def test_booleans_are_not_numbers():
    node = parse("flag:[0 TO 1]", EVENTS)
    assert not matches(node, {"@fields": {"flag": True}}, EVENTS)
    assert matches(parse("flag:TRUE", EVENTS), {"@fields": {"flag": True}}, EVENTS)


def test_cidr_skips_values_that_are_not_ips():
    node = ast.Cidr("@fields.sip", ipaddress.ip_network("10.0.0.0/8"))
    assert not matches(node, {"@fields": {"sip": ["host-10", 10, "10.0.0"]}}, EVENTS)
    assert matches(node, {"@fields": {"sip": ["host-10", "10.255.0.1"]}}, EVENTS)


def test_compiled_matcher_is_reused_for_the_same_tree():
    node = parse("user:adm* AND NOT action:deny", EVENTS)
    assert compile_matcher(node, EVENTS) is compile_matcher(parse("user:adm* AND NOT action:deny", EVENTS), EVENTS)


def test_wildcard_fast_paths_agree_with_regex():
    values = ["admin", "ADMIN", "xadmin", "adminx", "adm", "a*min", ""]
    for pattern in ["adm*", "*min", "*dmi*", "a\\*min", "a*m*n", "?dmin"]:
        node = ast.Wildcard("@fields.u", pattern)
        regex = re.compile(node.regex(), re.IGNORECASE)
        for v in values:
            assert matches(node, {"@fields": {"u": v}}, EVENTS) == bool(regex.fullmatch(v.lower())), (pattern, v)


# -- an OR of literal tests on one field (Sigma's value lists) ---------------------------------------

GROUP_PATHS = ["@fields.hashes", "@message", None]
# Case, case folding RE2 knows but str.lower() does not (ſ ~ s), numbers as keywords ("007" == 7), newlines,
# a lone surrogate (a JSON escape), patterns' own characters, a prefix of another word.
GROUP_WORDS = ["MD5=AB12", "md5=ab", "ab12", "ſys", "sys", "007", "7", "a\nb", "x*y?z", "\ud800", ""]


@st.composite
def literal_leaves(draw):
    """A node the matcher tests a field's strings with: equal, starts/ends with, holds, a pattern."""
    path = draw(st.sampled_from(GROUP_PATHS))
    word = draw(st.sampled_from(GROUP_WORDS))
    cased = draw(st.booleans())
    kind = draw(st.sampled_from(["term", "contains", "prefix", "suffix", "inner", "pattern", "equal"]))
    if kind == "term":
        return ast.Term(path, word, cased=cased)
    if kind == "contains":
        return ast.Contains(path, word, cased=cased)
    escaped = "".join("\\" + c if c in "*?\\" else c for c in word)
    pattern = {"prefix": escaped + "*", "suffix": "*" + escaped, "inner": "*" + escaped + "*",
               "pattern": escaped + "?*", "equal": escaped}[kind]
    return ast.Wildcard(path, pattern, cased=cased)


@st.composite
def group_records(draw):
    def values():
        return draw(st.one_of(st.sampled_from(GROUP_WORDS + [7, 7.0, True]),
                              st.lists(st.sampled_from(GROUP_WORDS + [7]), max_size=3)))

    fields = {"hashes": values()} if draw(st.integers(0, 3)) else {}
    return {"@timestamp": 1, "@message": " ".join(draw(st.lists(st.sampled_from(GROUP_WORDS), max_size=4))),
            "@fields": fields}


_H = "@fields.hashes"


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(children=[ast.Wildcard(_H, "ab12*"), ast.Wildcard(_H, "*md5=ab")], recs=[{"@fields": {"hashes": "MD5=AB12"}}])
@example(children=[ast.Wildcard(_H, "sys"), ast.Term(_H, "x")], recs=[{"@fields": {"hashes": "ſys"}}])
@example(children=[ast.Contains(_H, "AB", cased=True), ast.Term(_H, "md5=ab12", cased=True)],
         recs=[{"@fields": {"hashes": "md5=AB12"}}, {"@fields": {"hashes": "MD5=AB12"}}])
@given(children=st.lists(literal_leaves(), min_size=2, max_size=40), recs=st.lists(group_records(), min_size=1,
                                                                                     max_size=8))
def test_an_or_of_literals_on_one_field_matches_as_its_children_one_by_one(children, recs):
    # The OR's literal children are tested together per field (one set, one RE2 search, one RE2 full match):
    # the same records as each child's own matcher. Grouped from 1 here, so that few children make groups.
    with patch.object(matcher, "GROUPED", 1):
        matcher._MATCHERS.clear()
        grouped = compile_matcher(ast.Or(tuple(children)), EVENTS)
    matcher._MATCHERS.clear()
    alone = [compile_matcher(c, EVENTS) for c in children]
    for rec in recs:
        assert grouped(rec) == any(m(rec) for m in alone), rec


def test_a_long_list_of_hashes_is_one_lookup():
    # SigmaHQ's "Vulnerable Driver Load": thousands of `Hashes|contains` values on one field.
    hashes = [f"MD5={i:032x}" for i in range(2_000)]
    children = tuple(ast.Contains("@fields.hashes", h) for h in hashes)
    grouped, alone = compile_matcher(ast.Or(children), EVENTS), [compile_matcher(c, EVENTS) for c in children]
    hit = {"@fields": {"hashes": f"SHA1=00,{hashes[1_234].upper()},IMPHASH=11"}}
    miss = {"@fields": {"hashes": "MD5=" + "f" * 32}}
    assert [grouped(hit), grouped(miss), grouped({"@fields": {}})] == [True, False, False]

    def seconds(test) -> float:
        started = time.perf_counter()
        for _ in range(5):
            test(hit), test(miss)
        return time.perf_counter() - started

    # One search for the whole list, not a test per value (measured ~1,000x; judged side by side).
    assert seconds(grouped) * 20 < seconds(lambda rec: any(m(rec) for m in alone))


# Values a record's leaves may hold: texts that are numbers or look like them (Unicode digits, signs,
# exponents), others, numbers, booleans; keys with dots, arrays, nesting past MAX_DEPTH.
_SCALARS = st.one_of(st.sampled_from(["007", "+7", "-0.5", ".5", "1e3", "٣", "²", "", "x", "É", "İ", "Mixed Case",
                                      "12ab", "NaN", "inf"]),
                     st.text(max_size=4), st.integers(-10**20, 10**20), st.floats(allow_nan=False), st.booleans())
_KEYS = st.sampled_from(["a", "b", "a.b", "c"])
_TREES = st.recursive(st.one_of(_SCALARS, st.none()),
                      lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
                      max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(record=st.dictionaries(_KEYS, _TREES, max_size=4),
       paths=st.lists(st.sampled_from(["a", "b", "a.b", "a.b.c", "c", "a.a", "b.a.b", "c.c.c"]), max_size=4))
@example(record={"a": "+7", "b": ["-0.5", "٣", 7.0], "c": {"c": {"c": ".5"}}}, paths=["a", "b", "c.c.c"])
def test_a_views_values_and_keywords_are_the_same_whether_its_leaves_were_walked_or_not(record, paths):
    # The rule index walks a record's leaves once (paths()), and the view then reads values from that
    # walk, not with values_at; keywords read a text's spellings without keyword()'s calls.
    from seclake.record.flatten import values_at
    from seclake.record.value import keyword, scalar_text

    walked = matcher.RecordView(record, EVENTS)
    walked.paths()
    looked = matcher.RecordView(record, EVENTS)
    for path in paths:
        expected = values_at(record, path)
        assert sorted(map(repr, walked.values(path))) == sorted(map(repr, expected))
        assert sorted(map(repr, looked.values(path))) == sorted(map(repr, expected))
        spellings = frozenset([keyword(v) for v in expected] + [scalar_text(v).lower() for v in expected])
        assert walked.keywords(path) == spellings == looked.keywords(path)
