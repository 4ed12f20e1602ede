"""One split's search: the compiled-query cache stays bounded in bytes.

Reported (issue 17.2): an OR of hundreds of leading wildcards keeps ~1.5 GB
per distinct query text, because compiled queries (tantivy's automata) were
kept per split and query by count. Now they are kept by estimated bytes
(``query.cost``), so distinct pattern-heavy queries cannot pile up.
"""

from __future__ import annotations

import gc
import random
import string
from concurrent.futures import ThreadPoolExecutor

import pytest
from cachetools import LRUCache

from seclake.query.parser import parse
from seclake.record.dataset import DATASETS
from seclake.search import leaf
from seclake.search.plan import SearchPlan
from seclake.search.root import Root

DAY0 = 1_763_683_200_000


def _rss_mb() -> float:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.fixture
def root(lake_factory):
    lake = lake_factory()
    for batch in range(2):
        lake.append([
            ("event", {"@timestamp": DAY0 + i, "@message": f"login of user{i} failed", "@fields": {"user": f"u{i}"}})
            for i in range(batch * 20, batch * 20 + 20)
        ])
        lake.flush()
    with ThreadPoolExecutor(2) as pool:
        yield Root(lake.splits, pool)


def _pattern_query(rng: random.Random, patterns: int) -> str:
    words = ("".join(rng.choice(string.ascii_lowercase) for _ in range(20)) for _ in range(patterns))
    return " OR ".join(f"*{w}*" for w in words)


# The process's memory does not depend on the metadata database: SQLite only.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@SQLITE_ONLY
def test_distinct_pattern_queries_do_not_pile_up_compiled_automata(root, monkeypatch):
    budget = 64 << 20
    monkeypatch.setattr(leaf, "COMPILED_CACHE_BYTES", budget)
    monkeypatch.setattr(leaf, "_COMPILED", LRUCache(maxsize=budget, getsizeof=lambda entry: entry[1]))
    rng = random.Random(17)
    dataset = DATASETS["event"]
    # Warm up allocator arenas and the search path with one query first.
    root.search(SearchPlan(dataset="event", query=parse(_pattern_query(rng, 10), dataset)))
    before = _rss_mb()
    for _ in range(40):
        # 10 wildcards of 20 letters: ~3 MB of automata per split compiled;
        # kept by count, 40 queries on 2 splits held ~250 MB.
        result = root.search(SearchPlan(dataset="event", query=parse(_pattern_query(rng, 10), dataset)))
        assert result.total == 0
    grown = _rss_mb() - before
    assert leaf._COMPILED.currsize <= budget
    assert grown < 100, f"the process grew by {grown:.0f} MB over 40 distinct queries"


@SQLITE_ONLY
def test_any_number_of_distinct_pattern_queries_stays_within_the_documented_bound(root):
    # Issue 39.6: with the default budgets, distinct wildcard queries grew a
    # server by ~200 MB (+153 MB after 50 in the report): the cache charged one
    # automaton per pattern, but tantivy builds one per pattern and field
    # searched (a word without a field: ``all`` and each text field).
    rng = random.Random(39)
    dataset = DATASETS["event"]
    root.search(SearchPlan(dataset="event", query=parse(_pattern_query(rng, 4), dataset)))
    before = _rss_mb()
    for _ in range(200):
        result = root.search(SearchPlan(dataset="event", query=parse(_pattern_query(rng, 4), dataset)))
        assert result.total == 0
    grown = _rss_mb() - before
    assert grown < 80, f"the process grew by {grown:.0f} MB over 200 distinct queries (docs/security.md: under 80)"


def test_a_repeated_query_is_compiled_once_per_split(root):
    dataset = DATASETS["event"]
    query = parse("user*", dataset)
    calls = []
    original = leaf.compile_for_split

    def counting(*args, **kwargs):
        calls.append(args[1].meta.split_id)
        return original(*args, **kwargs)

    leaf.compile_for_split, saved = counting, leaf.compile_for_split
    try:
        for _ in range(3):
            assert root.search(SearchPlan(dataset="event", query=query)).total == 40
    finally:
        leaf.compile_for_split = saved
    assert len(calls) == len(set(calls)) == 2  # once per split, not per request
