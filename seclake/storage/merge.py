"""Which splits to merge: a tiered policy per dataset, UTC day and customer
partition, then one split per day and partition once the day is quiet.

Streaming ingestion publishes a small split every commit interval. Splits of
the same dataset and day are merged when ``factor`` of them sit in the same
size tier (powers of ten records), so each record is rewritten about
log10(records per day) times in all, and a day ends up in a few splits.

Every split a search touches costs a fixed amount (open searcher, query per
split, facet scan), so a day that has received nothing for ``SETTLE_MS``
is merged into one split. Records arriving late for an old day make a small
split that joins the day's split once the day is quiet again: one rewrite
of that day per quiet period, not per commit interval.

With customer partitions on (``partition.py``), only splits of one
partition merge, so a customer's split stays prunable for searches
restricted to other customers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from seclake.storage.catalog import CatalogEntry
from seclake.storage.partition import OFF, of_customers

DAY_MS = 86_400_000
MAX_MERGED_RECORDS = 10_000_000
# Splits of one size tier that are merged into one.
FACTOR = 8
SETTLE_MS = 30_000


def day_of(ms: int) -> int:
    return ms // DAY_MS


def tier(num_records: int) -> int:
    return int(math.log10(max(num_records, 1)))


def merge_candidates(
    entries: Iterable[CatalogEntry],
    factor: int = FACTOR,
    now_ms: int | None = None,
    settle_ms: int | None = None,
    partitions: int = OFF,
) -> list[list[CatalogEntry]]:
    """Groups of splits to merge, each into one split.

    ``now_ms`` None leaves out the merging of quiet days (callers that only
    want the tiered policy).
    """
    settle_ms = SETTLE_MS if settle_ms is None else settle_ms
    days: dict[tuple[str, int, str], list[CatalogEntry]] = defaultdict(list)
    for e in entries:
        if e.num_records >= MAX_MERGED_RECORDS or day_of(e.time_min) != day_of(e.time_max):
            continue
        days[(e.dataset, day_of(e.time_min), of_customers(e.customers, partitions))].append(e)
    out = []
    for members in days.values():
        members.sort(key=lambda e: e.split_id)
        quiet = now_ms is not None and now_ms - max(e.created_ms for e in members) >= settle_ms
        if len(members) >= 2 and quiet and sum(e.num_records for e in members) < MAX_MERGED_RECORDS:
            out.append(members)
            continue
        tiers: dict[int, list[CatalogEntry]] = defaultdict(list)
        for e in members:
            tiers[tier(e.num_records)].append(e)
        out.extend(group for group in tiers.values() if len(group) >= factor)
    return out
