"""The root skips splits whose customers the query and data policies exclude, and answers the same."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.cluster.catalogview import CatalogView
from seclake.query import ast
from seclake.query.parser import parse
from seclake.record.dataset import EVENTS
from seclake.search import root as root_module
from seclake.search.plan import FacetSpec, HistogramSpec, SearchPlan
from seclake.search.pruning import may_match
from seclake.search.root import InProcessLeaves, Root
from seclake.service.access import Rights
from seclake.storage import customers as cust
from seclake.storage.split import Split

DAY0 = 1_763_683_200_000
HOUR = 3_600_000

# One split per entry (one flush each): its records' @customer values.
SPLITS = {
    "acme": ["acme", "ACME", "acme"],
    "globex+none": ["globex", None, "globex", None],
    "arrays+scalars": [["acme", "initech"], 7, True, "7"],
    "none": [None, None],
    "umbrella": ["Umbrella", "umbrella corp"],
    "over the cap": [f"c{i}" for i in range(cust.MAX_CUSTOMERS + 5)] + ["acme"],
}


@pytest.fixture
def lake(lake_factory):
    # Mixed splits, one per flush, as a lake without customer partitions
    # (the default) or a day past their cap has: the hard case for pruning.
    lake = lake_factory()
    n = 0
    for values in SPLITS.values():
        items = []
        for value in values:
            rec = {
                "@timestamp": DAY0 + (n % 5) * HOUR,
                "@message": f"msg {n} login",
                "@sender": ["fw1", "dns"][n % 2],
                "@fields": {"n": n},
            }
            if value is not None:
                rec["@customer"] = value
            items.append(("event", rec))
            n += 1
        lake.append(items)
        lake.flush()
    assert len(lake.splits("event")) == len(SPLITS)
    return lake


def _policy(*layers):
    """A caller's restriction, as access.Rights builds it from data policies."""
    rights = Rights(
        frozenset(),
        data_layers=tuple(tuple((f"p{i}", (("event", text),)) for i, text in enumerate(layer)) for layer in layers),
    )
    return rights.restriction(EVENTS)


POLICIES = [
    None,
    _policy(["@customer:acme"]),
    _policy(["@customer:acme", "@customer:globex"]),  # two policies: either
    _policy(["NOT @customer:acme"]),
    _policy(["@customer:acme OR @customer:initech"], ["NOT @customer:initech"]),  # a token narrows
    _policy(["@customer:umbrella*"]),
    _policy(["NOT _exists_:@customer"]),
    _policy(["*"]),
]
QUERIES = [
    "",
    "login",
    "@customer:acme",
    "NOT @customer:acme",
    "@customer:acme OR @customer:globex",
    "@customer:ac*",
    "@customer:*x",
    "@customer:?lobex",
    "@customer:/ac.*/",
    "_exists_:@customer",
    "NOT _exists_:@customer",
    "@customer:7",
    "@customer:[a TO d]",
    "@customer:c3",
    "@fields.n:[0 TO 5] OR @customer:initech",
    "NOT (@customer:acme AND NOT login)",
    "@customer:umbrella AND NOT @customer:acme",
]


def _plan(query, policy):
    node = parse(query, EVENTS)
    return SearchPlan(
        dataset="event",
        query=node if policy is None else ast.and_(node, policy),
        range_from=DAY0,
        range_to=DAY0 + 4 * HOUR,
        limit=7,
        facets=(FacetSpec("@customer", 20), FacetSpec("@sender", 5)),
        histograms=(HistogramSpec("h", tuple(DAY0 + i * HOUR for i in range(5)), DAY0 + 5 * HOUR),),
    )


def _answer(result):
    return (
        result.total,
        [(h.split_id, h.docid) for h in result.hits],
        {p: ([(b.key, b.doc_count) for b in f.buckets], f.sum_other_doc_count) for p, f in result.facets.items()},
        result.histograms,
    )


def _searched(result):
    return result.splits


def _search_both(root, monkeypatch, plan):
    pruned = root.search(plan)
    with monkeypatch.context() as m:
        m.setattr(root_module, "prune", lambda splits, node, dataset: list(splits))
        full = root.search(plan)
    return pruned, full


def test_answers_are_those_of_the_full_search_for_every_policy_and_query(lake, monkeypatch):
    skipped = 0
    with ThreadPoolExecutor(2) as pool:
        root = Root(lake.splits, pool)
        for policy in POLICIES:
            for query in QUERIES:
                pruned, full = _search_both(root, monkeypatch, _plan(query, policy))
                assert _answer(pruned) == _answer(full), (query, policy)
                assert full.splits == len(SPLITS)
                # Every split left out holds no hit.
                assert pruned.splits >= len({h.split_id for h in full.hits})
                skipped += full.splits - pruned.splits
    assert skipped > 100  # pruning bites: most combinations skip splits


def _names(lake, result_plan, root):
    """The names (SPLITS keys) of the splits the root searched for a plan."""
    in_flush_order = sorted(lake.splits("event"), key=lambda s: s.meta.seq_min)
    by_id = {s.meta.split_id: name for s, name in zip(in_flush_order, SPLITS)}
    searched = []
    original = root.leaves.search

    def spy(splits, task):
        searched.extend(by_id[s.meta.split_id if hasattr(s, "meta") else s.split_id] for s in splits)
        return original(splits, task)

    root.leaves.search = spy
    try:
        result = root.search(result_plan)
    finally:
        root.leaves.search = original
    return sorted(searched), result


@pytest.mark.parametrize(
    "query, policy, searched",
    [
        # A caller restricted to acme searches the splits holding acme, and
        # the split past the cap (its customers are unknown).
        ("", ["@customer:acme"], ["acme", "arrays+scalars", "over the cap"]),
        # NOT acme: every split holding a record that is not acme's, even the one without customers.
        ("", ["NOT @customer:acme"], ["arrays+scalars", "globex+none", "none", "over the cap", "umbrella"]),
        ("@customer:acme OR @customer:globex", None, ["acme", "arrays+scalars", "globex+none", "over the cap"]),
        ("@customer:umbr*", None, ["over the cap", "umbrella"]),
        # Records without @customer are kept by NOT _exists_.
        ("NOT _exists_:@customer", None, ["globex+none", "none", "over the cap"]),
        # A number matches its string spelling and the reverse.
        ("@customer:7", None, ["arrays+scalars", "over the cap"]),
        # Regular expressions are not judged: every split is searched.
        ("@customer:/zzz.*/", None, sorted(SPLITS)),
        # A clause on another field is unknown: it prunes nothing by itself.
        ("login", ["@customer:globex"], ["globex+none", "over the cap"]),
    ],
)
def test_only_splits_that_may_hold_a_hit_are_searched_and_counted(lake, query, policy, searched):
    with ThreadPoolExecutor(2) as pool:
        root = Root(lake.splits, pool)
        names, result = _names(lake, _plan(query, None if policy is None else _policy(policy)), root)
    assert names == searched
    assert result.splits == len(searched)


def test_a_node_reading_the_catalog_prunes_as_the_lake_owner_does(lake, monkeypatch):
    view = CatalogView(lake.catalog, lake.layout)
    with ThreadPoolExecutor(2) as pool:
        embedded = Root(lake.splits, pool)
        leaves = InProcessLeaves(pool, open_split=lambda e: Split(lake.layout.split_dir(e.dataset, e.split_id)))
        catalog = Root(view.splits, leaves)
        for policy in POLICIES:
            for query in ("", "@customer:acme OR NOT @customer:ac*", "NOT _exists_:@customer"):
                plan = _plan(query, policy)
                pruned, full = _search_both(catalog, monkeypatch, plan)
                mine = embedded.search(plan)
                assert _answer(pruned) == _answer(full) == _answer(mine)
                assert pruned.splits == mine.splits


def _customers(*values):
    out = cust.CustomerSet()
    for v in values:
        out.add({} if v is None else {"@customer": v})
    return out.customers


def _may(query, *values):
    return may_match(parse(query, EVENTS), _customers(*values), EVENTS)


def test_three_valued_evaluation_is_certain_only_about_customers():
    assert not _may("@customer:acme", "globex", None)
    assert _may("@customer:acme", "globex", "Acme")
    assert _may("NOT @customer:acme", "acme", None)  # the record without customer
    assert not _may("NOT @customer:acme", "acme", "ACME")
    # Unknown AND false is false; unknown OR false is unknown.
    assert not _may("login AND @customer:acme", "globex")
    assert _may("login OR @customer:acme", "globex")
    assert not _may("NOT (login OR @customer:globex)", "globex")
    assert _may("NOT (login AND @customer:globex)", "globex")
    assert not _may("@customer:[m TO z]", "acme", "globex")
    assert _may("@customer:[a TO b]", "acme")
    assert not _may("_exists_:@customer", None)
    assert _may("@customer:*", ["x"])
    # Unknown customers are never pruned.
    assert may_match(parse("@customer:acme", EVENTS), None, EVENTS)


def test_hostile_query_shapes_fall_back_to_searching_quickly():
    customers = _customers(*(f"c{i}" for i in range(cust.MAX_CUSTOMERS)))
    deep: ast.Node = ast.Term("@customer", "zzz")
    for _ in range(5000):
        deep = ast.Not(ast.Not(deep))  # built by hand: the parser refuses such depth
    wide = ast.Or(tuple(ast.Term("@customer", f"x{i}") for i in range(100_000)))
    stars = ast.Wildcard("@customer", "*a*a*a*a*a*a*a*a*a*a*b")
    regex = ast.Regex("@customer", "(a*)*b")
    started = time.monotonic()
    for node in (deep, wide, stars, regex, ast.And((wide, deep))):
        assert may_match(node, customers, EVENTS)
    assert time.monotonic() - started < 2
    # A long OR of customers within the bounds is still judged exactly.
    some = ast.Or(tuple(ast.Term("@customer", f"x{i}") for i in range(50)))
    assert not may_match(some, customers, EVENTS)
