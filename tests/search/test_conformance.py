"""Conformance: the tantivy engine gives every golden case's expected ids.

The cases (tests/query/fixtures/match_cases.yaml) fix the meaning of
query-semantics.md as data; the Python matcher runs the same file. Records
are spread over two splits so that every answer is also a merge.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.db.database import Database
from seclake.query import ast
from seclake.query.parser import parse, parse_filters
from seclake.record.dataset import DATASETS
from seclake.search.plan import SearchPlan
from seclake.search.root import Root
from seclake.storage import shape, split
from seclake.storage.lake import Lake
from tests.query.fixtures import load_match_cases

CASES = load_match_cases()


@pytest.fixture(scope="module", params=[3, "3spilled", 2, 1], ids=["format3", "format3spilled", "format2", "format1"])
def engines(tmp_path_factory, request):
    """One lake per dataset of the cases, holding that dataset's records, in
    splits of each format the engine reads (1 and 2: splits written by an
    earlier seclake), and in format 3 with a table of two shapes, so most
    records keep existence terms beside the shapes of the first two."""
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "3spilled":
            mp.setattr(shape, "MAX_SHAPES", 2)
        mp.setattr(split, "WRITE_FORMAT", 3 if request.param == "3spilled" else request.param)
        yield from _engines(tmp_path_factory)


def _engines(tmp_path_factory):
    base = tmp_path_factory.mktemp("conformance")
    db = Database(f"sqlite:///{base / 'meta.db'}")
    db.migrate()
    lake = Lake(base / "data", db)
    lake.start(background=False)
    ids: dict[str, dict[int, str]] = {}
    seen = set()
    for case in CASES:
        if case.dataset in seen:
            continue
        seen.add(case.dataset)
        half = len(case.records) // 2
        mapping = {}
        for chunk in (case.records[:half], case.records[half:]):
            if not chunk:
                continue
            first, _ = lake.append([(case.dataset, r) for r in chunk])
            mapping.update({first + i: r["id"] for i, r in enumerate(chunk)})
            lake.flush()
        ids[case.dataset] = mapping
    pool = ThreadPoolExecutor(2)
    yield Root(lake.splits, pool), ids
    pool.shutdown()
    lake.stop()
    db.dispose()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_engine_gives_the_expected_ids(engines, case):
    root, ids = engines
    dataset = DATASETS[case.dataset]
    query = parse(case.query, dataset, default_operator=case.default_operator, now_ms=case.now_ms)
    filters = parse_filters(case.must_filters, case.must_not_filters, dataset)
    plan = SearchPlan(dataset=case.dataset, query=ast.and_(query, filters), limit=1000)
    result = root.search(plan)
    got = sorted(ids[case.dataset][h.docid] for h in result.hits)
    assert got == sorted(case.ids), case.note
    assert result.total == len(case.ids)
