"""Partitions: each customer's records of a day go to splits of their own.

Pruning (``search/pruning.py``) skips a split only when none of its
customers can match; a split holding every customer of a day is never
skipped. So the indexer splits a batch by dataset, UTC day *and* partition,
and merges only join splits of one partition (the model is Quickwit's
``partition_key`` with ``max_num_partitions``).

A record's partition is its customer signature (``customers.py``): ``acme``
and ``ACME`` are two partitions, which costs a split, never an answer. At
most ``MAX_PARTITIONS`` partitions of one dataset and day in a batch get
splits of their own, those with the most records; the rest share one
``MIXED`` split, as do records whose customers a signature cannot say. A
split's partition is read back from its customers: one signature is that
partition, anything else (several, unknown, a split written before
partitions) is ``MIXED``.

Partitions multiply the splits a day ends in: an unrestricted search pays
the fixed cost per split once per partition. The cap bounds that.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from seclake.storage.customers import Customers, Unknown, signature

MAX_PARTITIONS = 16
MIXED = "*"  # no signature is "*": signatures are JSON lists


def key_of(source: dict[str, Any]) -> str:
    """The partition a record is written to, before the cap."""
    try:
        # Interned: a batch holds many records of few customers.
        return sys.intern(signature(source))
    except Unknown:
        return MIXED


def of_customers(customers: Customers) -> str:
    """The partition of a written split, from its customers."""
    return customers[0] if customers is not None and len(customers) == 1 else MIXED


def capped(keys: Sequence[str]) -> list[str]:
    """Each record's partition once the cap applies: the largest keep their own."""
    counts = Counter(keys)
    if len(counts) <= MAX_PARTITIONS:
        return list(keys)
    own = {k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_PARTITIONS - 1]}
    return [k if k in own else MIXED for k in keys]
