"""Searches over splits kept on object storage answer as over the shared filesystem.

No real S3 is reachable here: the split store is moto's S3 server on
127.0.0.1 (``tests/storage/s3server.py``), a local stand-in that speaks the
S3 HTTP protocol. The ingest side is the real lake (it uploads each split
before publishing it); the search side is ``Searcher`` objects behind the
cluster leaf executor (as in test_searcher.py, everything pickled as Ray
would) and a read-only API node with no shared filesystem at all: both read
only what they downloaded from the bucket into their own cache directory.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.cluster.searcher import Searcher
from seclake.search.root import Root
from seclake.storage.catalog import PUBLISHED
from seclake.storage.splitstore import SplitStore
from tests.cluster.lakedata import CASES, answer, build_lake, plans
from tests.cluster.test_searcher import ThreadLeaves
from tests.storage.s3server import s3_stand_in

T0 = 1_763_683_200_000  # 2025-11-21T00:00:00Z
HOUR = 3_600_000
CALL = "ds/get_index_zoom_histogram_lv3"


@pytest.fixture(scope="module")
def s3():
    with s3_stand_in() as server:
        yield server


def _objects(store: SplitStore) -> set[str]:
    import obstore

    return {o["path"].split("/")[1] for batch in obstore.list(store.store) for o in batch}


@pytest.fixture(scope="module")
def stored_modes(s3, tmp_path_factory):
    base = tmp_path_factory.mktemp("stored-lake")
    config = s3.config(s3.bucket())
    lake, db, ids = build_lake(base, store=SplitStore(config, max_retries=0))
    pool = ThreadPoolExecutor(4)
    # No shared filesystem for the searchers: a splits dir that does not exist.
    searchers = {
        f"searcher-{n}": Searcher(str(base / "not-shared"), store=config, cache_dir=str(base / f"cache-{n}"))
        for n in ("a", "b")
    }
    # A third with room for about one split: it evicts all the time.
    one = max(e.size_bytes for e in lake.catalog.entries(PUBLISHED))
    tight = {"searcher-t": Searcher(str(base / "not-shared"), store=config, cache_dir=str(base / "cache-t"), cache_bytes=one)}
    embedded = Root(lake.splits, pool)
    cluster = Root(lake.splits, ThreadLeaves(searchers, pool))
    tight_root = Root(lake.splits, ThreadLeaves(tight, pool))
    yield embedded, cluster, tight_root, searchers, tight, lake
    pool.shutdown()
    lake.stop()
    db.dispose()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_searchers_reading_the_bucket_answer_as_the_shared_filesystem(stored_modes, case):
    embedded, cluster, tight, *_ = stored_modes
    for plan in plans(case):
        want = answer(embedded.search(plan))
        assert answer(cluster.search(plan)) == want, case.name
    # The evicting searcher downloads on almost every search: a sample of the cases is enough.
    if CASES.index(case) % 6 == 0:
        assert answer(tight.search(plans(case)[1])) == answer(embedded.search(plans(case)[1])), case.name


def test_every_split_was_read_from_a_searcher_copy_within_its_budget(stored_modes):
    *_, searchers, tight, lake = stored_modes
    published = {e.split_id for e in lake.catalog.entries(PUBLISHED)}
    assert _objects(lake.store) == published
    copies = set()
    for s in searchers.values():
        copies.update(s.cache.copies())
        assert s.info()["splits_dir_exists"] is False
    assert copies == published
    (t,) = tight.values()
    info = t.info()
    assert info["evicted"] > 0 and info["downloaded"] > len(published)
    assert info["cached_bytes"] <= t.cache.max_bytes


def _events(n: int) -> bytes:
    return "\n".join(
        json.dumps({
            "@timestamp": T0 + (i % 48) * HOUR + i,
            "@message": f"{['denied', 'allowed'][i % 2]} connection {i}",
            "@sender": f"fw-{i % 3}",
            "@fields": {"action": ["deny", "accept"][i % 2], "dport": [22, 443, 3389][i % 3], "user": ["admin", "bob"][i % 2]},
        })
        for i in range(n)
    ).encode()


def _search(srv, token, query: str, offset: int = 0):
    opts = {
        "dateFacetField": "@timestamp", "range_from": T0, "range_to": T0 + 72 * HOUR,
        "searchStr": query, "sortField": "@timestamp", "sortOrder": "desc", "fetchOffset": offset, "fetchLimit": 7,
        "facets": {"facets": [{"field": "@sender", "size": 5}, {"field": "@fields.dport", "size": 5}],
                   "mustFilters": [], "mustNotFilters": [],
                   "dateFacets": [{"name": "dateHistogram", "key": "@timestamp", "interval": "hour"}]},
    }
    res = srv.call(CALL, {"partition": "default", "dataType": "event", "options": opts}, token)
    res.pop("took")
    return res


def test_an_import_through_the_api_lands_in_the_bucket_and_a_node_without_shared_files_answers_the_same(
    s3, start_server, tmp_path
):
    bucket = s3.bucket()
    ingest = start_server(tmp_path / "ingest", **s3.settings(bucket))
    token = ingest.login()
    for part in range(3):  # three imports, three commits: several splits per day
        r = ingest.http.post("/api/import/fw", content=_events(40 + part), headers={"Servicetoken": token})
        assert r.status_code == 200 and r.json()["response"]["accepted"] == 40 + part, r.text
        # lastDocId is the public number; the lake waits for its log sequence (it waited out the timeout).
        assert ingest.services.lake.wait_indexed(ingest.services.record_ids.sequence(r.json()["response"]["lastDocId"]), timeout=10)
    published = {e.split_id for e in ingest.services.lake.catalog.entries(PUBLISHED)}
    assert len(published) >= 4
    assert _objects(ingest.services.split_store) == published
    # A read-only API node on another data dir (nothing shared but the catalog and the bucket).
    reader = start_server(
        tmp_path / "reader",
        ingest=False,
        database_url=ingest.settings.effective_database_url,
        split_cache_dir=tmp_path / "reader-cache",
        **s3.settings(bucket),
    )
    assert not (tmp_path / "reader" / "lake").exists()
    rtoken = reader.login()
    for query in ("*", "denied", "action:deny AND NOT dport:22", "user:bob OR @sender:fw-1"):
        for offset in (0, 5):
            want = _search(ingest, token, query, offset)
            assert want["hits"]["total"] > 0
            assert _search(reader, rtoken, query, offset) == want, (query, offset)
    copies = {p.name for p in (tmp_path / "reader-cache" / "event").iterdir()}
    assert copies == published
