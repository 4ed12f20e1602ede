"""The in-memory engine: the golden cases, and the same answers as the lake.

Every golden case runs through ``search_records``; then one set of records
is put both in a lake and in memory, and sorted pages, facets and histograms
must come out identical from both engines.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.db.database import Database
from seclake.query import ast
from seclake.query.parser import parse, parse_filters
from seclake.record.dataset import BEHAVIORS, DATASETS, SUMMARIES
from seclake.search.memory import search_records
from seclake.search.plan import FacetSpec, HistogramSpec, SearchPlan
from seclake.search.root import Root
from seclake.storage.lake import Lake
from tests.query.fixtures import load_match_cases

CASES = load_match_cases()
T0 = 1_763_683_200_000
HOUR = 3_600_000


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_case(case):
    dataset = DATASETS[case.dataset]
    query = parse(case.query, dataset, default_operator=case.default_operator, now_ms=case.now_ms)
    filters = parse_filters(case.must_filters, case.must_not_filters, dataset)
    plan = SearchPlan(dataset=case.dataset, query=ast.and_(query, filters), limit=1000)
    result = search_records([(r["id"], r) for r in case.records], plan, dataset)
    assert sorted(h.record_id for h in result.hits) == sorted(case.ids), case.note
    assert result.total == len(case.ids)


def _behaviors() -> list[dict]:
    """Behavior records with duplicated sort values, mixed spellings, arrays and gaps."""
    out = []
    for i in range(40):
        rec = {
            "id": f"b{i:03d}",
            "timestamp": T0 + (i % 7) * HOUR + (i % 3),
            "key": ["Alice", "alice", "bob", "Carol", "ALICE"][i % 5],
            "keyType": "username" if i % 4 else "ip",
            "riskScore": [100, 250, 250, 4000, "4000", 8000][i % 6],
            "risks": [["Exfil", "exfil"], ["lateral"], [], ["Exfil"]][i % 4],
            "description": f"user did thing {i}",
            "port": [443, "443", 22][i % 3],
        }
        if i % 9 == 0:
            del rec["riskScore"]  # sorts last in both directions
        if i % 11 == 0:
            rec["key"] = ""
        out.append(rec)
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The same records in a lake (two splits) and in memory."""
    base = tmp_path_factory.mktemp("memory")
    db = Database(f"sqlite:///{base / 'meta.db'}")
    db.migrate()
    lake = Lake(base / "data", db)
    lake.start(background=False)
    records = _behaviors()
    ids: dict[int, str] = {}
    for chunk in (records[:17], records[17:]):
        first, _ = lake.append([("behavior", r) for r in chunk])
        ids.update({first + i: r["id"] for i, r in enumerate(chunk)})
        lake.flush()
    pool = ThreadPoolExecutor(2)
    yield Root(lake.splits, pool), ids, [(r["id"], r) for r in records]
    pool.shutdown()
    lake.stop()
    db.dispose()


def _run(both, **kw):
    root, ids, records = both
    query = kw.pop("query", "")
    plan = SearchPlan(dataset="behavior", query=parse(query, BEHAVIORS, now_ms=T0), **kw)
    lake = root.search(plan)
    memory = search_records(records, plan, BEHAVIORS)
    return lake, memory, ids


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("sort_path", ["riskScore", "timestamp", "port", "nothing"])
def test_sorted_pages_equal_the_lake(both, sort_path, descending):
    # ids grow with the lake's docIds, so both engines break ties the same way.
    for offset in (0, 7, 30):
        lake, memory, ids = _run(both, sort_path=sort_path, descending=descending, offset=offset, limit=9)
        assert [ids[h.docid] for h in lake.hits] == [h.record_id for h in memory.hits]
        assert [h.sort_value for h in lake.hits] == [h.sort_value for h in memory.hits]
        assert lake.total == memory.total == 40


def test_pages_cover_every_record_once(both):
    _, _, records = both
    seen = []
    for offset in range(0, 40, 6):
        plan = SearchPlan(dataset="behavior", query=ast.MatchAll(), sort_path="riskScore", offset=offset, limit=6)
        seen += [h.record_id for h in search_records(records, plan, BEHAVIORS).hits]
    assert sorted(seen) == sorted(r for r, _ in records)
    # Records lacking riskScore come last even in descending order.
    lacking = sorted((r for r, rec in records if "riskScore" not in rec), reverse=True)
    assert len(lacking) == 5 and seen[-5:] == lacking


@pytest.mark.parametrize("query", ["", "keyType:username", "NOT risks:exfil", "riskScore:[250 TO 4000]"])
def test_facets_equal_the_lake(both, query):
    facets = tuple(FacetSpec(p, s) for p, s in [("key", 2), ("risks", 10), ("riskScore", 3), ("port", 1),
                                                ("description", 5), ("timestamp", 5)])
    lake, memory, _ = _run(both, query=query, facets=facets, range_from=T0 + HOUR, range_to=T0 + 5 * HOUR)
    assert lake.total == memory.total
    assert lake.facets == memory.facets


def test_facet_groups_spellings_and_counts_exactly(both):
    _, _, records = both
    plan = SearchPlan(dataset="behavior", query=ast.MatchAll(), facets=(FacetSpec("key", 1), FacetSpec("risks", 10),
                                                                        FacetSpec("port", 10)))
    res = search_records(records, plan, BEHAVIORS)
    key = res.facets["key"]
    # Alice (7), alice (7) and ALICE (8) are one bucket; the most frequent spelling names it.
    spellings = [r["key"] for _, r in records]
    assert (spellings.count("Alice"), spellings.count("alice"), spellings.count("ALICE")) == (7, 7, 8)
    assert [(b.key, b.doc_count) for b in key.buckets] == [("ALICE", 22)]
    assert key.sum_other_doc_count == 40 - key.buckets[0].doc_count
    # A record holding Exfil and exfil counts once; 443 and "443" share a bucket.
    risks = {b.key: b.doc_count for b in res.facets["risks"].buckets}
    assert risks == {"Exfil": 20, "lateral": 10}
    port = {b.key: b.doc_count for b in res.facets["port"].buckets}
    assert port == {"443": 27, "22": 13}


def test_histogram_equals_the_lake(both):
    starts = tuple(T0 + i * HOUR for i in range(8))
    hist = (HistogramSpec("dateHistogram", starts, T0 + 8 * HOUR),)
    lake, memory, _ = _run(both, query="keyType:username", histograms=hist, range_from=T0, range_to=T0 + 8 * HOUR)
    assert lake.histograms == memory.histograms
    assert sum(n for _, n in memory.histograms["dateHistogram"]) == memory.total


def test_range_on_another_date_field_excludes_records_lacking_it():
    records = [("a", {"from": 10, "to": 50}), ("b", {"from": 20}), ("c", {"from": 30, "to": 5})]
    plan = SearchPlan(dataset="summary", query=ast.MatchAll(), range_from=0, range_to=60, range_path="to",
                      sort_path="from", descending=False)
    res = search_records(records, plan, SUMMARIES)
    assert [h.record_id for h in res.hits] == ["a", "c"]
    plan = SearchPlan(dataset="summary", query=ast.MatchAll(), range_from=10, range_to=20, sort_path="from")
    assert [h.record_id for h in search_records(records, plan, SUMMARIES).hits] == ["b", "a"]


def test_empty_input():
    plan = SearchPlan(dataset="summary", query=ast.MatchAll(), facets=(FacetSpec("status", 5),))
    res = search_records([], plan, SUMMARIES)
    assert res.total == 0 and res.hits == [] and res.facets["status"].buckets == []


def test_a_search_past_its_deadline_stops_with_an_error():
    # Matching is linear, but a broad query over many records still holds a
    # worker thread: the plan's timeout stops it instead of letting it run.
    import time  # noqa: PLC0415

    from seclake.errors import SearchTimeout  # noqa: PLC0415

    records = [(str(i), {"timestamp": T0 + i, "key": f"host-{i}", "behavior": "Port Scan"}) for i in range(200_000)]
    query = parse("*o*s*t*", SUMMARIES)
    started = time.perf_counter()
    with pytest.raises(SearchTimeout, match=r"stopped after 0.05 s .* of 200000 records"):
        search_records(records, SearchPlan("summary", query, timeout=0.05), SUMMARIES)
    assert time.perf_counter() - started < 1.5
    # Without a deadline, the same search answers in full.
    assert search_records(records, SearchPlan("summary", query), SUMMARIES).total == 200_000
