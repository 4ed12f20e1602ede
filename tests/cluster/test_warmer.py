"""The warmer: each searcher is asked to open the splits it owns before a search needs them.

Real ``Searcher`` objects over a real lake's splits (shared directory) and
its catalog; only Ray's call is replaced by a direct one (``send``), as in
test_searcher.py. The same warm-up over a real Ray cluster is in
test_ray_cluster.py.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.cluster.rendezvous import assign
from seclake.cluster.searcher import Searcher
from seclake.cluster.warmer import Warmer
from seclake.db.database import Database
from seclake.query import ast
from seclake.search.plan import SearchPlan
from seclake.search.root import Root
from seclake.storage.catalog import PUBLISHED
from seclake.storage.lake import Lake
from seclake.storage.merge import DAY_MS
from tests.cluster.test_searcher import Directory, ThreadLeaves

DAY0 = 1_763_683_200_000
NOW = DAY0 + 10 * DAY_MS


@pytest.fixture
def lake(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'meta.db'}")
    db.migrate()
    lake = Lake(tmp_path / "data", db)
    lake.start(background=False)
    for day in range(10):
        lake.append([("event", {"@timestamp": DAY0 + day * DAY_MS + i, "@message": f"d{day} r{i}"}) for i in range(3)])
        lake.flush()
    yield lake
    lake.stop()
    db.dispose()


def settle(searchers) -> None:
    """Wait until every searcher has worked through what it was sent (its warm requests run in order)."""
    for s in searchers.values():
        s._warmer.submit(int).result(timeout=30)


def test_each_searcher_opens_its_recent_splits_ahead_and_a_joiner_gets_its_share(lake):
    splits_dir = str(lake.layout.splits)
    searchers = {name: Searcher(splits_dir) for name in ("searcher-a", "searcher-b")}
    directory = Directory(searchers)
    sent: list[tuple[str, list]] = []
    names_of = {id(s): n for n, s in searchers.items()}

    def send(handle, splits):
        sent.append((names_of[id(handle)], [sid for _d, sid, _b in splits]))
        handle.warm(splits)

    warmer = Warmer(lake.catalog, directory, days=7, send=send, now_ms=lambda: NOW)
    entries = lake.catalog.entries(PUBLISHED)
    # Days 3..9 are within 7 days of NOW; days 0..2 are not warmed.
    recent = [e for e in entries if e.time_max >= NOW - 7 * DAY_MS]
    assert len(recent) == 7 and len(entries) == 10
    owner = assign([e.split_id for e in recent], sorted(searchers))

    counts = warmer.tick()
    settle(searchers)
    assert sum(counts.values()) == 7
    for name, ids in sent:
        assert ids == [e.split_id for e in sorted(recent, key=lambda e: -e.time_max) if owner[e.split_id] == name]
    for name, s in searchers.items():
        assert s.info()["warmed"] == s.cache.opened == sum(1 for o in owner.values() if o == name)
    # A search over the warm days opens nothing more on any searcher.
    with ThreadPoolExecutor(2) as pool:
        root = Root(lake.splits, ThreadLeaves(searchers, pool))
        plan = SearchPlan(dataset="event", query=ast.MatchAll(), range_from=NOW - 7 * DAY_MS, range_to=NOW, limit=5)
        assert root.search(plan).total == 21
    assert sum(s.cache.opened for s in searchers.values()) == 7

    # Nothing new: nothing sent.
    sent.clear()
    assert warmer.tick() == {} and sent == []

    # A searcher joins: it is sent exactly the splits it now owns, the others nothing.
    searchers["searcher-c"] = Searcher(splits_dir)
    names_of[id(searchers["searcher-c"])] = "searcher-c"
    owner = assign([e.split_id for e in recent], sorted(searchers))
    counts = warmer.tick()
    settle(searchers)
    mine = sum(1 for o in owner.values() if o == "searcher-c")
    assert counts == ({"searcher-c": mine} if mine else {})
    assert searchers["searcher-c"].cache.opened == mine

    # A new split (a flush of today's records) reaches its owner at the next round.
    lake.append([("event", {"@timestamp": NOW - 1000, "@message": "fresh"})])
    lake.flush()
    new = {e.split_id for e in lake.catalog.entries(PUBLISHED)} - {e.split_id for e in entries}
    assert len(new) == 1
    sent.clear()
    warmer.tick()
    assert [ids for _n, ids in sent] == [list(new)]
    assert sent[0][0] == assign(list(new), sorted(searchers))[next(iter(new))]
