"""Matcher details the golden cases do not pin down."""

from __future__ import annotations

import ipaddress
import re

from seclake.query import ast
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
