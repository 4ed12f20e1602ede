"""The server's garbage collector settings: an import's batch walks no young collection."""

from __future__ import annotations

import gc
import itertools

from seclake.cli.collector import quiet_collector
from seclake.demo import generate
from seclake.ingest.parser import parse_line

OLD_THRESHOLD = 100_000  # the young threshold before: two importers' batches crossed it every few seconds


def test_an_import_batch_held_until_it_is_logged_makes_no_young_collection():
    # A parsed record is about ten containers, alive until its batch is logged: at the old
    # threshold each young collection walked the live batch to free nothing, stalling every
    # thread (searches too) for 28-112 ms under the bench's import.
    lines = list(itertools.islice(generate(days=1, end_ms=1_793_491_200_000, events_per_day=30_000, seed=3), 16_000))
    saved = gc.get_threshold()
    try:
        quiet_collector()
        gc.collect()
        collections = gc.get_stats()[0]["collections"]
        start = gc.get_count()[0]
        held = [parse_line(x.line, vendor=x.vendor, dataset=x.dataset, received_ms=0, customer=x.customer)
                for x in lines]
        grown = gc.get_count()[0] - start
        assert gc.get_stats()[0]["collections"] == collections
        assert grown > OLD_THRESHOLD  # the batch holds more than the old threshold allowed
        assert sum(r is not None for r in held) > 15_000
    finally:
        gc.set_threshold(*saved)
        gc.unfreeze()
