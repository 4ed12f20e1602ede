"""The cyclic garbage collector's settings for long-running commands."""

from __future__ import annotations

import gc

# Young collections after this many more container objects than were freed
# (Python's default: 700).
YOUNG_COLLECTION_AT = 100_000


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
    """
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_AT)
