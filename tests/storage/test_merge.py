"""Which splits merge: tiers while a day is busy, the whole day once it is quiet."""

from __future__ import annotations

import dataclasses

from seclake.storage.catalog import PUBLISHED, CatalogEntry
from seclake.storage.merge import DAY_MS, SETTLE_MS, merge_candidates

DAY = 20_000 * DAY_MS
NOW = DAY + 3 * DAY_MS


def _split(n: int, records: int, created_ms: int, day: int = DAY, dataset: str = "event") -> CatalogEntry:
    return CatalogEntry(f"{dataset}-{n:04d}", dataset, day + n, day + n + 10, records, records * 500, PUBLISHED,
                        created_ms)


def test_a_busy_day_merges_only_full_tiers():
    busy = [_split(i, 100, NOW - 1000) for i in range(8)] + [_split(100, 5000, NOW - 1000)]
    groups = merge_candidates(busy, now_ms=NOW)
    assert [sorted(e.split_id for e in g) for g in groups] == [sorted(e.split_id for e in busy[:8])]
    assert merge_candidates(busy[:7] + busy[8:], now_ms=NOW) == []


def test_a_quiet_day_becomes_one_split_and_other_days_wait():
    quiet = [_split(1, 100, NOW - SETTLE_MS), _split(2, 90_000, NOW - SETTLE_MS - 5000)]
    other_day = [_split(3, 100, NOW - 10, day=DAY + DAY_MS), _split(4, 100, NOW - 10, day=DAY + DAY_MS)]
    flows = [_split(5, 100, NOW - SETTLE_MS, dataset="flow")]  # alone in its day: nothing to merge
    groups = merge_candidates(quiet + other_day + flows, now_ms=NOW)
    assert [[e.split_id for e in g] for g in groups] == [["event-0001", "event-0002"]]


def test_without_a_clock_only_the_tiers_count():
    quiet = [_split(1, 100, 0), _split(2, 100, 0)]
    assert merge_candidates(quiet) == []
    assert len(merge_candidates(quiet, now_ms=NOW)) == 1


def test_only_splits_of_one_customer_partition_merge():
    def of(n: int, customers) -> CatalogEntry:
        return dataclasses.replace(_split(n, 100, NOW - SETTLE_MS), customers=customers)

    acme = [of(1, ('["acme"]',)), of(2, ('["acme"]',))]
    globex = [of(3, ('["globex"]',)), of(4, ('["globex"]',))]
    # Several customers, unknown ones, and splits from before partitions share one partition.
    mixed = [of(5, ('["acme"]', '["globex"]')), of(6, None)]
    everything = acme + globex + mixed + [of(7, ("[]",))]
    groups = merge_candidates(everything, now_ms=NOW, partitions=16)
    assert sorted([e.split_id for e in g] for g in groups) == [
        ["event-0001", "event-0002"], ["event-0003", "event-0004"], ["event-0005", "event-0006"]
    ]
    # Partitions off (the default): the quiet day is one split again, whatever its splits hold.
    (whole,) = merge_candidates(everything, now_ms=NOW)
    assert len(whole) == 7
