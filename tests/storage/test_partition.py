"""Each customer's records of a day go to splits of their own, so restricted searches skip the others."""

from concurrent.futures import ThreadPoolExecutor

from seclake.query import ast
from seclake.query.parser import parse
from seclake.record.dataset import EVENTS
from seclake.search.plan import SearchPlan
from seclake.search.root import Root
from seclake.storage import merge
from seclake.storage.catalog import PUBLISHED
from seclake.storage.merge import DAY_MS

DAY0 = 1_763_683_200_000
LIMIT = 16  # setting customer_partitions
CUSTOMERS = ["acme", "globex", "initech", None]


def _event(i, customer, day=0):
    rec = {"@timestamp": DAY0 + day * DAY_MS + i, "@message": f"event {i}"}
    if customer is not None:
        rec["@customer"] = customer
    return rec


def _customers(lake):
    return sorted(s.meta.customers for s in lake.splits("event"))


def test_a_batch_is_split_by_customer_and_day(lake_factory):
    lake = lake_factory(partitions=LIMIT)
    lake.append([("event", _event(i, CUSTOMERS[i % 4], day=i // 4 % 2)) for i in range(40)])
    lake.flush()
    # Two days, four partitions each (records without a customer are one).
    assert _customers(lake) == sorted([('["acme"]',), ('["globex"]',), ('["initech"]',), ("[]",)] * 2)
    assert sum(s.meta.num_records for s in lake.splits("event")) == 40


def test_past_the_cap_the_smallest_partitions_share_one_split(lake_factory):
    lake = lake_factory(partitions=LIMIT)
    many = LIMIT + 4
    # Customer c<k> has k + 1 records: the largest keep splits of their own.
    lake.append([("event", _event(k * 100 + j, f"c{k}")) for k in range(many) for j in range(k + 1)])
    lake.flush()
    splits = lake.splits("event")
    assert len(splits) == LIMIT
    singles = sorted(s.meta.customers[0] for s in splits if len(s.meta.customers) == 1)
    assert singles == sorted(f'["c{k}"]' for k in range(many - LIMIT + 1, many))
    (mixed,) = [s for s in splits if len(s.meta.customers) > 1]
    assert mixed.meta.customers == tuple(sorted(f'["c{k}"]' for k in range(many - LIMIT + 1)))


def test_merges_join_splits_of_one_partition_only(lake_factory, monkeypatch):
    lake = lake_factory(partitions=LIMIT)
    for batch in range(3):
        lake.append([("event", _event(batch * 10 + i, CUSTOMERS[i % 4])) for i in range(10)])
        lake.flush()
    assert len(lake.splits("event")) == 12
    monkeypatch.setattr(merge, "SETTLE_MS", 0)
    assert lake.merge() == 4  # the quiet day: one split per partition
    assert _customers(lake) == [('["acme"]',), ('["globex"]',), ('["initech"]',), ("[]",)]
    assert sorted(e.num_records for e in lake.catalog.entries(PUBLISHED, "event")) == [6, 6, 9, 9]


def test_a_caller_restricted_to_one_customer_searches_only_its_splits(lake_factory):
    lake = lake_factory(partitions=LIMIT)
    lake.append([("event", _event(i, CUSTOMERS[i % 4], day=i % 3)) for i in range(120)])
    lake.flush()
    with ThreadPoolExecutor(2) as pool:
        root = Root(lake.splits, pool)
        everything = root.search(SearchPlan("event", ast.MatchAll(), limit=0))
        acme = root.search(SearchPlan("event", parse("@customer:acme", EVENTS), limit=0))
    assert (everything.total, everything.splits) == (120, 12)
    assert (acme.total, acme.splits) == (30, 3)
