"""The cyclic garbage collector's settings for long-running commands."""

from __future__ import annotations

import gc

# Young collections after this many more container objects than were freed
# (Python's default: 700).
YOUNG_COLLECTION_AT = 500_000


def quiet_collector() -> None:
    """Keep the cyclic garbage collector from stalling every call.

    A search allocates tens of thousands of short-lived objects (hits,
    facet buckets), an import as many per batch (parsed records, their
    views and behaviors). With the default thresholds, young collections ran
    in the middle of requests, their objects were promoted, and a full
    collection over the whole heap (~60 ms on a 2M-event lake) followed
    every few searches, stalling whatever ran then; an import command spent
    ~7% of its time in collections. With a higher first threshold the
    garbage dies by reference counting before any collection; what exists
    at start-up is frozen out of the passes.

    The threshold is above what an import holds alive: a parsed record is
    about ten containers (the record, its field maps, lists), held until
    its batch is logged. At 100,000 two importers' batches of 4,000 lines
    crossed it every few seconds, and each young collection walked the
    batches' live records to find little to free: 10 pauses of 28-112 ms
    (715 ms in all) over the two 30 s import phases of the bench's
    searches-under-an-import stage, each stalling every thread, searches
    included. At 500,000 there was none past 2 ms (docs/operations.md). Memory is not held by it:
    what is not in a reference cycle is freed at once, whatever the
    threshold.
    """
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_AT)
