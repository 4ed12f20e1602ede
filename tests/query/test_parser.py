"""Parser behaviour beyond the golden cases: limits, filters, positions, threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.errors import LimitExceeded, QueryError, ValidationFailed
from seclake.query import ast
from seclake.query.echo import to_dict
from seclake.query.limits import QueryLimits
from seclake.query.parser import parse, parse_filters
from seclake.record.dataset import EVENTS, SUMMARIES
from seclake.settings import Settings

NOW = 1_700_000_000_000


def test_limits_come_from_settings():
    settings = Settings(max_query_length=100, max_clauses=5, max_pattern_length=10)
    limits = QueryLimits.from_settings(settings)
    assert (limits.max_query_length, limits.max_clauses, limits.max_pattern_length) == (
        100,
        5,
        10,
    )


def test_too_long_query_names_the_limit():
    with pytest.raises(LimitExceeded) as info:
        parse("a" * 9000, EVENTS)
    assert str(info.value) == "searchStr length is 9000, above the limit of 8192"
    assert info.value.limit == "searchStr length"


def test_too_many_clauses():
    limits = QueryLimits(max_clauses=3)
    assert parse("a b c", EVENTS, limits=limits)
    with pytest.raises(LimitExceeded) as info:
        parse("a b c d", EVENTS, limits=limits)
    assert info.value.maximum == 3


def test_clauses_in_ranges_and_fields_count_too():
    limits = QueryLimits(max_clauses=2)
    with pytest.raises(LimitExceeded):
        parse("dport:[1 TO 2] OR user:(a OR b)", EVENTS, limits=limits)


@pytest.mark.parametrize("query", ["user:" + "a" * 20 + "*", "/" + "a" * 20 + "/"])
def test_long_patterns_are_refused(query):
    with pytest.raises(LimitExceeded) as info:
        parse(query, EVENTS, limits=QueryLimits(max_pattern_length=10))
    assert "pattern length" in info.value.limit


@pytest.mark.parametrize(
    "query",
    ["(" * 5000 + "a" + ")" * 5000, "NOT " * 2000 + "a", "!" * 3000 + "a", "-" * 3000 + "a", "(" * 8000],
)
def test_deep_nesting_is_an_error_not_a_crash(query):
    with pytest.raises((LimitExceeded, QueryError)):
        parse(query, EVENTS)


def test_nesting_within_the_limit_parses():
    node = parse("(" * 30 + "a" + ")" * 30, EVENTS)
    assert node == ast.Term(None, "a")


def test_positions_count_characters_of_the_original_string():
    # '&&' becomes AND and '!' becomes NOT before luqum sees the query; the
    # position must still point into what the user typed.
    with pytest.raises(QueryError) as info:
        parse("a && !b && (c", EVENTS)
    assert info.value.position == len("a && !b && (c")
    with pytest.raises(QueryError) as info:
        parse("!a && b) || c", EVENTS)
    assert info.value.position == 7


def test_blank_and_none_match_everything():
    assert parse(None, EVENTS) == ast.MatchAll()
    assert parse(" \n\t", EVENTS) == ast.MatchAll()


def test_date_math_uses_now():
    node = parse("@timestamp:>=now-1h", EVENTS, now_ms=NOW)
    assert node == ast.Range("@timestamp", NOW - 3_600_000, None, True, True, "number")


def test_dates_in_nested_date_fields():
    node = parse("comments.createdOn:2023-11-14", SUMMARIES)
    assert node == ast.Range("comments.createdOn", 1699920000000, 1700006399999, True, True, "number")


def test_wildcard_parts_keep_literal_stars_apart():
    node = parse(r"user:a\*b*c?", EVENTS)
    assert isinstance(node, ast.Wildcard)
    assert node.parts() == ("=a*b", "*", "=c", "?")


def test_parsing_is_thread_safe():
    queries = ["a AND b", "user:(x OR y)", "foo AND", "(a OR b", "dport:[1 TO 5]"] * 40

    def run(q):
        try:
            return to_dict(parse(q, EVENTS))
        except QueryError as exc:
            return (exc.position, exc.expected)

    serial = [run(q) for q in queries]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(run, queries)) == serial


# -- facet filters --------------------------------------------------------------


def test_filters_become_one_tree():
    node = parse_filters(
        [{"field": "dport", "terms": ["443", 22]}, {"field": "@message", "terms": ["failed password"]}],
        [{"field": "user", "terms": [True]}],
        EVENTS,
    )
    assert node == ast.And(
        (
            ast.Or((ast.Term("@fields.dport", "443"), ast.Term("@fields.dport", "22"))),
            ast.Term("@message", "failed password"),
            ast.Not(ast.Term("@fields.user", "true")),
        )
    )


def test_no_filters_match_everything():
    assert parse_filters(None, [], EVENTS) == ast.MatchAll()


@pytest.mark.parametrize(
    ("must", "field"),
    [
        ({"field": "a"}, "options.facets.mustFilters"),
        ([{"field": "a", "terms": ["x"]}, {"field": "b", "terms": ["y"]}, {"field": "c", "terms": "z"}],
         "options.facets.mustFilters[2].terms"),
        ([{"field": "a", "terms": [None]}], "options.facets.mustFilters[0].terms[0]"),
        ([{"field": "a", "terms": [{"x": 1}]}], "options.facets.mustFilters[0].terms[0]"),
        ([{"field": "a", "terms": [float("nan")]}], "options.facets.mustFilters[0].terms[0]"),
        ([{"field": "", "terms": []}], "options.facets.mustFilters[0].field"),
        ([{"field": 7, "terms": []}], "options.facets.mustFilters[0].field"),
        ([{"field": "x" * 10000, "terms": []}], "options.facets.mustFilters[0].field"),
        (["dport"], "options.facets.mustFilters[0]"),
        ([{"field": "a", "terms": ["x"] * 5000}], "options.facets.mustFilters[0].terms"),
        ([{"field": "a", "terms": ["x" * 10000]}], "options.facets.mustFilters[0].terms[0]"),
    ],
)
def test_bad_filters_name_the_field(must, field):
    with pytest.raises(ValidationFailed) as info:
        parse_filters(must, None, EVENTS)
    assert info.value.field == field


def test_bad_must_not_filters_name_their_list():
    with pytest.raises(ValidationFailed) as info:
        parse_filters([], [{"field": "a", "terms": [[1]]}], EVENTS)
    assert info.value.field == "options.facets.mustNotFilters[0].terms[0]"


def test_filters_count_against_the_clause_limit():
    with pytest.raises(LimitExceeded):
        parse_filters(
            [{"field": "a", "terms": ["x", "y"]}],
            [{"field": "b", "terms": ["x", "y"]}],
            EVENTS,
            limits=QueryLimits(max_clauses=3),
        )
