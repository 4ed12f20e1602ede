"""The conformance cases as a lake, and the searches run over it in both modes.

Each dataset's records are spread over several splits (chunks flushed one by
one), so every answer is a merge across splits and, in cluster mode, across
searchers. ``plans`` gives, per golden case, the plain search plus a paged,
sorted, faceted one, so totals, hit order across any offset, exact facets and
the fetch phase are all compared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seclake.db.database import Database
from seclake.query import ast
from seclake.query.parser import parse, parse_filters
from seclake.record.dataset import DATASETS
from seclake.record.flatten import leaves
from seclake.search.plan import FacetSpec, SearchPlan
from seclake.search.root import SearchResult
from seclake.storage.lake import Lake
from seclake.storage.splitstore import SplitStore
from tests.query.fixtures import load_match_cases

CASES = load_match_cases()
CHUNKS = 3


def build_golden_lake(base: Path) -> tuple[Lake, Database]:
    """A started lake (no background threads) under ``base/data`` holding the analytics golden set's
    records (tests/analytics/golden.py) in 6 splits: imports of 30 records, each flushed."""
    from tests.analytics.golden import documents

    db = Database(f"sqlite:///{base / 'meta.db'}")
    db.migrate()
    lake = Lake(base / "data", db)
    lake.start(background=False)
    docs = documents()
    for at in range(0, len(docs), 30):
        lake.append([("event", d) for d in docs[at:at + 30]])
        lake.flush()
    return lake, db


def build_lake(base: Path, store: SplitStore | None = None) -> tuple[Lake, Database, dict[str, dict[int, str]]]:
    """A started lake (no background threads) under ``base/data`` holding every case's records.

    With ``store``, each split is also uploaded there before it is published.
    """
    db = Database(f"sqlite:///{base / 'meta.db'}")
    db.migrate()
    lake = Lake(base / "data", db, store=store)
    lake.start(background=False)
    ids: dict[str, dict[int, str]] = {}
    for case in CASES:
        if case.dataset in ids:
            continue
        size = max(1, -(-len(case.records) // CHUNKS))
        mapping: dict[int, str] = {}
        for start in range(0, len(case.records), size):
            chunk = case.records[start : start + size]
            first, _ = lake.append([(case.dataset, r) for r in chunk])
            mapping.update({first + i: r["id"] for i, r in enumerate(chunk)})
            lake.flush()
        ids[case.dataset] = mapping
    return lake, db, ids


def _facet_paths(case) -> tuple[str, ...]:
    paths: list[str] = []
    for record in case.records:
        for path, _ in leaves(record):
            if path not in paths and path != "id":
                paths.append(path)
    return tuple(paths[:3])


def plans(case) -> list[SearchPlan]:
    dataset = DATASETS[case.dataset]
    query = parse(case.query, dataset, default_operator=case.default_operator, now_ms=case.now_ms)
    filters = parse_filters(case.must_filters, case.must_not_filters, dataset)
    node = ast.and_(query, filters)
    return [
        SearchPlan(dataset=case.dataset, query=node, limit=1000),
        SearchPlan(
            dataset=case.dataset,
            query=node,
            offset=1,
            limit=2,
            descending=False,
            facets=tuple(FacetSpec(p, 5) for p in _facet_paths(case)),
        ),
    ]


def answer(result: SearchResult) -> dict[str, Any]:
    """Everything a search answers, except the time it took."""
    return {
        "total": result.total,
        "hits": [(h.split_id, h.docid, h.sort_value, h.source) for h in result.hits],
        "facets": {
            p: ([(b.key, b.doc_count) for b in f.buckets], f.sum_other_doc_count) for p, f in result.facets.items()
        },
        "histograms": result.histograms,
        "splits": result.splits,
        "failed": result.failed,
    }
