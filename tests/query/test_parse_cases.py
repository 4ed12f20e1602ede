"""Golden parse cases (fixtures/parse_cases.yaml): how each query is read."""

from __future__ import annotations

import pytest

from seclake.errors import QueryError
from seclake.query.echo import to_dict
from seclake.query.parser import parse
from seclake.record.dataset import DATASETS

from .fixtures import load_parse_cases

CASES = load_parse_cases()


@pytest.mark.parametrize("case", [c for c in CASES if c.expect is not None], ids=lambda c: c.name)
def test_query_reads_as_expected(case):
    dataset = DATASETS[case.dataset]
    node = parse(case.query, dataset, default_operator=case.default_operator, now_ms=case.now_ms)
    assert to_dict(node, dataset) == case.expect


@pytest.mark.parametrize("case", [c for c in CASES if c.error is not None], ids=lambda c: c.name)
def test_bad_query_says_where_and_what(case):
    dataset = DATASETS[case.dataset]
    with pytest.raises(QueryError) as info:
        parse(case.query, dataset, default_operator=case.default_operator, now_ms=case.now_ms)
    err = info.value
    want = case.error
    if "position" in want:
        assert err.position == want["position"], str(err)
        assert f"at position {want['position']}" in str(err)
    if "message" in want:
        assert want["message"] in str(err)
    if "expected" in want:
        assert err.expected is not None and want["expected"] in err.expected, str(err)
