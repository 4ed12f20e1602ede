"""Golden match cases (fixtures/match_cases.yaml) against the Python matcher."""

from __future__ import annotations

import pytest

from seclake.query.ast import and_
from seclake.query.matcher import compile_matcher, matches
from seclake.query.parser import parse, parse_filters
from seclake.record.dataset import DATASETS

from .fixtures import load_match_cases

CASES = load_match_cases()


def _query(case):
    dataset = DATASETS[case.dataset]
    node = parse(case.query, dataset, default_operator=case.default_operator, now_ms=case.now_ms)
    filters = parse_filters(case.must_filters, case.must_not_filters, dataset)
    return and_(node, filters), dataset


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matching_records(case):
    node, dataset = _query(case)
    test = compile_matcher(node, dataset)
    got = [r["id"] for r in case.records if test(r)]
    assert got == case.ids, case.note


@pytest.mark.parametrize("case", CASES[::7], ids=lambda c: c.name)
def test_uncompiled_matches_agrees(case):
    node, dataset = _query(case)
    assert [r["id"] for r in case.records if matches(node, r, dataset)] == case.ids


def test_every_record_id_is_unique_and_every_case_names_known_ids():
    for case in CASES:
        ids = [r["id"] for r in case.records]
        assert len(ids) == len(set(ids))
        assert set(case.ids) <= set(ids), case.name
        assert case.ids == [i for i in ids if i in case.ids], f"{case.name}: list ids in record order"
