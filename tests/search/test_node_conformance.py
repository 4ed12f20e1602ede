"""Conformance of Sigma's nodes: the tantivy engine gives every golden node
case's ids (tests/query/fixtures/node_cases.yaml, which the matcher runs too).

The index answers these nodes as a superset and the leaf reads the
candidates (``search/leaf.py``): the records are spread over two splits of
each format the engine reads, so every answer is also a merge, and the
facets and histograms of a verified query count only its records.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.db.database import Database
from seclake.errors import QueryError
from seclake.query import ast
from seclake.record.dataset import DATASETS
from seclake.search import leaf
from seclake.search.plan import FacetSpec, SearchPlan
from seclake.search.root import Root
from seclake.storage import split
from seclake.storage.lake import Lake
from tests.query.fixtures import load_node_cases

CASES = load_node_cases()
RECORDS = CASES[0].records


@pytest.fixture(scope="module", params=[3, 2, 1], ids=["format3", "format2", "format1"])
def engine(tmp_path_factory, request):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(split, "WRITE_FORMAT", request.param)
        base = tmp_path_factory.mktemp("nodes")
        db = Database(f"sqlite:///{base / 'meta.db'}")
        db.migrate()
        lake = Lake(base / "data", db)
        lake.start(background=False)
        ids: dict[int, str] = {}
        half = len(RECORDS) // 2
        for chunk in (RECORDS[:half], RECORDS[half:]):
            first, _ = lake.append([("event", r) for r in chunk])
            ids.update({first + i: r["id"] for i, r in enumerate(chunk)})
            lake.flush()
        pool = ThreadPoolExecutor(2)
        yield Root(lake.splits, pool), ids
        pool.shutdown()
        lake.stop()
        db.dispose()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_engine_gives_the_expected_ids(engine, case):
    root, ids = engine
    result = root.search(SearchPlan(dataset="event", query=case.node, limit=1000))
    assert sorted(ids[h.docid] for h in result.hits) == sorted(case.ids), case.note
    assert result.total == len(case.ids)


def test_facets_and_pages_count_only_the_verified_records(engine):
    root, ids = engine
    # The superset (uncased: deny, Deny, DENY) holds a1 and a2; the answer a1 only.
    node = ast.Term("@fields.action", "Deny", cased=True)
    plan = SearchPlan(dataset="event", query=node, limit=1, facets=(FacetSpec("@fields.action", 10),))
    result = root.search(plan)
    assert result.total == 1 and [ids[h.docid] for h in result.hits] == ["a1"]
    assert [(b.key.lower(), b.doc_count) for b in result.facets["@fields.action"].buckets] == [("deny", 1)]


def test_a_verified_query_keeps_records_among_rejected_ones_whichever_runs_are_fewer(engine):
    root, ids = engine
    # Alternating kept/rejected candidates: both ways of naming the kept set.
    for node, want in (
        (ast.Regex("@message", "^(sshd|Process)", "re2"), ["p1", "p2", "s1", "s2"]),
        (ast.Regex("@message", "^sshd\\[811", "re2"), ["s1"]),
        (ast.not_(ast.Regex("@message", "^sshd\\[811", "re2")), ["p1", "p2", "s2", "a1", "a2"]),
    ):
        result = root.search(SearchPlan(dataset="event", query=node, limit=100))
        assert sorted(ids[h.docid] for h in result.hits) == sorted(want)


def test_too_many_candidates_in_a_split_is_a_clear_error(engine, monkeypatch):
    root, _ = engine
    monkeypatch.setattr(leaf, "MAX_CANDIDATES", 1)
    node = ast.Regex("@message", "(?i)unlikely-to-be-cached-[0-9]", "re2")
    with pytest.raises(QueryError, match="candidate record"):
        root.search(SearchPlan(dataset="event", query=node, limit=10))


def test_candidates_are_read_a_batch_at_a_time(engine, monkeypatch):
    root, ids = engine
    monkeypatch.setattr(leaf, "VERIFY_BATCH", 2)
    node = ast.Regex("@message", "^(?:sshd\\[811|Process Create|policy change$)", "re2")
    result = root.search(SearchPlan(dataset="event", query=node, limit=100))
    assert sorted(ids[h.docid] for h in result.hits) == ["a1", "p1", "p2", "s1"]
