"""Golden cases of Sigma's nodes (fixtures/node_cases.yaml) against the Python matcher."""

from __future__ import annotations

import pytest

from seclake.query.matcher import compile_matcher
from seclake.record.dataset import DATASETS

from .fixtures import load_node_cases

CASES = load_node_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matching_records(case):
    test = compile_matcher(case.node, DATASETS[case.dataset])
    assert [r["id"] for r in case.records if test(r)] == case.ids, case.note


def test_every_case_lists_known_ids_in_record_order():
    for case in CASES:
        ids = [r["id"] for r in case.records]
        assert case.ids == [i for i in ids if i in case.ids], case.name
