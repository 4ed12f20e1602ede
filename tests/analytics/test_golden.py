"""The golden set: execute agrees with the brute-force reference (tests/analytics/golden.py)."""

from __future__ import annotations

import pytest

from seclake.analytics import execute, parse
from seclake.query.matcher import matches
from seclake.query.parser import parse as parse_query
from seclake.record.dataset import EVENTS
from tests.analytics.golden import NOW, QUERIES, RECORDS, agree, documents


def test_the_golden_set_is_large_enough():
    assert len(QUERIES) >= 60
    assert len({g.query for g in QUERIES}) == len(QUERIES)


def _selected(head: str, records: list[dict]) -> list[dict]:
    """The records the head selects, by seclake's own search matcher (as the service's search does)."""
    if not head:
        return list(records)
    tree = parse_query(head, EVENTS)
    docs = documents(records)
    return [r for r, d in zip(records, docs) if matches(tree, d, EVENTS)]


@pytest.mark.parametrize("golden", QUERIES, ids=[g.query[:70] for g in QUERIES])
def test_execute_agrees_with_the_reference(golden):
    pipeline = parse(golden.query)
    records = _selected(pipeline.head, RECORDS)
    result = execute(pipeline, records, now=NOW)
    assert agree(result.columns, result.values, golden, records) is None, agree(result.columns, result.values, golden, records)


@pytest.mark.parametrize("golden", QUERIES[::3], ids=[g.query[:70] for g in QUERIES[::3]])
def test_a_subset_of_the_records_agrees_too(golden):
    """As a restricted user's visible records: the answers follow what is given, nothing else."""
    subset = [r for i, r in enumerate(RECORDS) if i % 3 != 1]
    pipeline = parse(golden.query)
    records = _selected(pipeline.head, subset)
    result = execute(pipeline, records, now=NOW)
    assert agree(result.columns, result.values, golden, records) is None, agree(result.columns, result.values, golden, records)
