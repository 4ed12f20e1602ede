"""Which splits to merge: a tiered policy per dataset and UTC day.

Streaming ingestion publishes a small split every commit interval. Splits of
the same dataset and day are merged when ``factor`` of them sit in the same
size tier (powers of ten records), so each record is rewritten about
log10(records per day) times in all, and a day ends up in a few splits.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from seclake.storage.catalog import CatalogEntry

DAY_MS = 86_400_000
MAX_MERGED_RECORDS = 10_000_000


def day_of(ms: int) -> int:
    return ms // DAY_MS


def tier(num_records: int) -> int:
    return int(math.log10(max(num_records, 1)))


def merge_candidates(entries: Iterable[CatalogEntry], factor: int = 8) -> list[list[CatalogEntry]]:
    groups: dict[tuple[str, int, int], list[CatalogEntry]] = defaultdict(list)
    for e in entries:
        if e.num_records >= MAX_MERGED_RECORDS or day_of(e.time_min) != day_of(e.time_max):
            continue
        groups[(e.dataset, day_of(e.time_min), tier(e.num_records))].append(e)
    out = []
    for members in groups.values():
        if len(members) >= factor:
            members.sort(key=lambda e: e.split_id)
            out.append(members)
    return out
