"""analytics/language.py: a query's text parsed once, then served from the LRU of pipelines."""

from __future__ import annotations

import pytest

from seclake.analytics import execute, parse
from seclake.analytics.language import PARSED_TEXT_MOST
from seclake.errors import QueryError
from seclake.record.dataset import EVENTS, FLOWS

QUERY = "user.name:alice | STATS n = COUNT(*) BY source.ip | SORT n DESC | LIMIT 5"


def test_the_same_text_is_parsed_once() -> None:
    first = parse(QUERY, EVENTS)
    # The pipeline is immutable (frozen dataclasses, tuples), so one parse serves every ask.
    assert parse(QUERY, "event") is first
    # Another dataset resolves names differently: its own pipeline.
    assert parse(QUERY, FLOWS) is not first
    assert parse(QUERY, FLOWS).dataset is FLOWS


def test_a_cached_pipeline_answers_as_a_fresh_one() -> None:
    records = [{"@fields.source.ip": "10.0.0.1"}, {"@fields.source.ip": "10.0.0.1"}, {"@fields.source.ip": "10.0.0.2"}]
    text = "| STATS n = COUNT(*) BY source.ip | SORT n DESC"
    answers = [execute(parse(text), records) for _ in range(2)]
    assert answers[0] == answers[1]
    assert answers[0].values == [[2, "10.0.0.1"], [1, "10.0.0.2"]]


def test_errors_are_raised_every_time() -> None:
    for _ in range(2):
        with pytest.raises(QueryError) as e:
            parse("a | STATS n = COUNT(* BY b")
        assert e.value.position is not None


def test_long_texts_are_not_kept() -> None:
    text = "| STATS n = COUNT(*)" + " " * PARSED_TEXT_MOST
    assert parse(text) is not parse(text)  # parsed each time: a hostile stream of long texts holds nothing
    assert parse(text).commands == parse("| STATS n = COUNT(*)").commands
