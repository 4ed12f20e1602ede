"""Where the search head ends: the first single '|' before a command, outside quotes, regexes and brackets."""

from __future__ import annotations

import pytest

from seclake.analytics import parse
from seclake.analytics.pipes import first_pipe


@pytest.mark.parametrize(
    ("text", "head"),
    [
        ("", ""),
        ("user:alice", "user:alice"),
        ("| STATS COUNT(*)", ""),
        ("user:alice | STATS COUNT(*)", "user:alice"),
        ("user:alice|stats count(*)", "user:alice"),
        ("a || b | WHERE x > 1", "a || b"),
        ("a||b|LIMIT 1", "a||b"),
        ('msg:"a | WHERE b" | LIMIT 1', 'msg:"a | WHERE b"'),
        ("path:/a|b/ | LIMIT 1", "path:/a|b/"),
        ("path:/a| LIMIT 1/ | LIMIT 2", "path:/a| LIMIT 1/"),
        ("(a | WHERE b) | LIMIT 1", "(a | WHERE b)"),
        ("n:[1 TO 5] | KEEP n", "n:[1 TO 5]"),
        ('a\\| WHERE b | LIMIT 1', "a\\| WHERE b"),
        ("a | whereas | LIMIT 1", "a | whereas"),
    ],
)
def test_the_head_ends_at_the_first_command_pipe(text, head):
    assert parse(text).head == head


def test_a_pipe_before_a_command_keyword_ends_the_head_even_when_the_command_is_incomplete():
    from seclake.analytics import QueryError

    with pytest.raises(QueryError) as raised:
        parse("a | WHERE")
    assert raised.value.position == 9


def test_no_command_means_no_pipeline():
    # A word that is no command keeps the text a search (a Lucene term may hold '|').
    assert first_pipe("a | b") is None
    p = parse("user:x | y")
    assert p.commands == () and p.head == "user:x | y"


def test_an_unclosed_phrase_keeps_the_rest_in_the_head():
    # luqum then reports the unclosed phrase, as a search does.
    assert first_pipe('msg:"a | STATS COUNT(*)') is None


def test_the_scan_is_linear_on_long_hostile_heads():
    import time

    text = '"' * 50_000 + "/" * 50_000 + "(" * 50_000 + "|" * 50_000
    started = time.perf_counter()
    first_pipe(text)
    assert time.perf_counter() - started < 1.0


def test_the_head_keeps_its_offsets():
    # A search error's position in the head is its position in the whole query.
    assert parse("  user:x | LIMIT 1").head == "  user:x"
