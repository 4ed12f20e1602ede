"""Parsing the commands: the tree, and errors that name the position and what was expected."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.analytics import QueryError, execute, parse
from seclake.analytics import tree as t
from seclake.errors import LimitExceeded


def test_keywords_are_case_insensitive_and_names_keep_their_text():
    p = parse("x | stats Count(*), n = count_distinct(user.name) by BUCKET(@timestamp, 1 hour) | sort n desc nulls last | limit 5")
    stats, sort, limit = p.commands
    assert [a.name for a in stats.aggregates] == ["Count(*)", "n"]
    assert [g.name for g in stats.groups] == ["BUCKET(@timestamp, 1 hour)"]
    assert sort.keys[0].descending and not sort.keys[0].nulls_first
    assert limit.count == 5


def test_fields_the_commands_read():
    assert parse("| STATS COUNT(*) BY user.name").fields == {"@fields.user.name"}
    assert parse("| WHERE bytes > 1 | STATS SUM(bytes) BY host").fields == {"@fields.bytes", "@fields.host"}
    assert parse("| WHERE bytes > 1").fields is None  # rows are whole records
    assert parse("| KEEP user.name").fields == {"@fields.user.name", "@timestamp"}
    assert parse("| EVAL x = 1 | STATS COUNT(*) BY x").fields == frozenset()


def test_backquoted_and_keyword_like_names():
    p = parse("| WHERE `first name` == \"a\" AND first == 1 AND d == 2")
    cond = p.commands[0].condition
    names = []
    stack = [cond]
    while stack:
        n = stack.pop()
        if isinstance(n, t.Field):
            names.append(n.name)
        stack.extend(t.children(n))
    assert sorted(names) == ["d", "first", "first name"]


@pytest.mark.parametrize(
    ("query", "position", "words"),
    [
        ("| WHERE a ==", 12, "expected an expression"),
        ("x | WHERE a = 1", 12, "'=='"),
        ("| STATS COUNT(*) BY", 19, "unexpected end"),
        ('| WHERE a == "abc', 13, "unclosed string"),
        ("| WHERE a > 1 | SORT", 20, "unexpected end"),
        ("| LIMIT x", 8, "an integer"),
        ("| WHERE FOO(a)", 8, "unknown function FOO"),
        ("| WHERE COUNT(*) > 1", 8, "only stand in STATS"),
        ("| STATS a = COUNT(*) | WHERE b > 1", 29, "unknown column 'b'"),
        ("| STATS user.name", 8, "no aggregation"),
        ("| STATS SUM(COUNT(*))", 8, "another"),
        ("| STATS PERCENTILE(x, 101)", 22, "from 0 to 100"),
        ("| STATS TOP(x, 0)", 15, "TOP's count"),
        ('| WHERE CIDR_MATCH(ip, "10.0.0.0/33")', 23, "CIDR block"),
        ("| EVAL x = LENGTH(a, b)", 11, "takes 1 arguments"),
        ('| WHERE a LIKE "x*y*z*[" AND b RLIKE "(a"', 40, "regular expression"),
        ("| EVAL x = 1 hour", 11, "time span"),
        ("| DROP a | WHERE a > 1", 17, "dropped"),
        ('| WHERE @timestamp > "yesterday"', 21, "not a date"),
        ("| RENAME a* AS b", 9, "names, not patterns"),
    ],
)
def test_errors_name_the_position_and_what_was_expected(query, position, words):
    with pytest.raises(QueryError) as raised:
        parse(query)
    assert raised.value.position == position, raised.value
    assert words in str(raised.value)


def test_limits_are_checked_at_parse():
    with pytest.raises(LimitExceeded):
        parse("| LIMIT 1000000")
    with pytest.raises(LimitExceeded):
        parse("| WHERE " + "NOT " * 100 + "a")
    with pytest.raises(LimitExceeded):
        parse("| EVAL x = " + "-(" * 100 + "a" + ")" * 100)
    with pytest.raises(LimitExceeded):
        parse("| WHERE " + " + ".join(["a"] * 200))
    with pytest.raises(LimitExceeded):
        parse("| WHERE a > 1" * 3000)
    with pytest.raises(LimitExceeded, match="patterns"):
        parse("".join(["| WHERE a LIKE \"x*\" "] * 200))


def test_hostile_text_never_crashes_the_parser():
    parse("| WHERE " + "(" * 500 + "a" + ")" * 500)  # parentheses add no depth to the tree
    for text in ["| WHERE", "| STATS ,", "| SORT a,", "| KEEP", "| WHERE \x00", "| WHERE a IN ()",
                 "| EVAL = 1", "| WHERE ``", "| WHERE 99999999999999999999 > 1", "| WHERE 1e999 > 1", "| STATS COUNT(*) BY"]:
        with pytest.raises(QueryError):
            parse(text)


_TOKENS = ["|", " ", "WHERE", "EVAL", "STATS", "SORT", "LIMIT", "KEEP", "DROP", "RENAME", "BY", "AS", "ASC", "DESC",
           "NULLS", "FIRST", "LAST", "AND", "OR", "NOT", "IS", "NULL", "IN", "LIKE", "RLIKE", "true", "false", "(", ")",
           ",", "=", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "a", "b.c", "@timestamp", "`x y`",
           '"s"', '"a*"', '"(a|b)"', "1", "0", "-1", "2.5", "1 hour", "7 days", "COUNT", "SUM", "AVG", "MIN", "MAX",
           "MEDIAN", "PERCENTILE", "VALUES", "TOP", "COUNT_DISTINCT", "TO_LOWER", "CONCAT", "SUBSTRING", "CASE",
           "ROUND", "CIDR_MATCH", "DATE_TRUNC", "BUCKET", "NOW", "COALESCE", "TO_LONG", '"10.0.0.0/8"', '"\\', "`"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=30), st.text(max_size=5))
def test_any_text_parses_or_fails_with_a_query_error(tokens, noise):
    """Hostile input: only QueryError/LimitExceeded escape, and what parses runs."""
    text = "| " + " ".join(tokens) + noise
    try:
        pipeline = parse(text)
    except (QueryError, LimitExceeded):
        return
    records = [{"@timestamp": 1, "@fields.a": 1, "@fields.b.c": "x"}, {"@fields.a": [1, "2"], "@fields.b.c": None}, {}]
    try:
        execute(pipeline, records, now=0)
    except (QueryError, LimitExceeded):
        pass
