"""Partitions: each customer's records of a day go to splits of their own.

Pruning (``search/pruning.py``) skips a split only when none of its
customers can match; a split holding every customer of a day is never
skipped. So the indexer splits a batch by dataset, UTC day *and* partition,
and merges only join splits of one partition (the model is Quickwit's
``partition_key`` with ``max_num_partitions``).

A record's partition is its customer signature (``customers.py``): ``acme``
and ``ACME`` are two partitions, which costs a split, never an answer. At
most ``limit`` partitions of one dataset and day in a batch get splits of
their own (setting ``customer_partitions``), those with the most records;
the rest share one ``MIXED`` split, as do records whose customers a
signature cannot say. A limit of 1 (the default) turns partitioning off:
every record is ``MIXED``, a day is one split per dataset again. A
split's partition is read back from its customers: one signature is that
partition, anything else (several, unknown, a split written before
partitions) is ``MIXED``.

Partitions multiply the splits a day ends in: an unrestricted search pays
the fixed cost per split once per partition (measured, embedded, 3
customers: an unrestricted search 1.3 -> 2.1 ms, one restricted to a
customer 0.93 -> 0.82 ms). So it is opt-in, for deployments whose callers
are mostly restricted to one customer (a service provider's tenants).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from seclake.storage.customers import Customers, Unknown, signature

# Partitions of one dataset and day at most (the setting's upper bound is
# lower); 1: no partitioning.
OFF = 1
MIXED = "*"  # no signature is "*": signatures are JSON lists


def key_of(source: dict[str, Any]) -> str:
    """The partition a record is written to, before the cap."""
    try:
        # Interned: a batch holds many records of few customers.
        return sys.intern(signature(source))
    except Unknown:
        return MIXED


def keyer(limit: int) -> Callable[[dict[str, Any]], str]:
    """What gives a record its partition under ``limit``: with partitioning
    off (the default) every record is MIXED, and no signature (a JSON dump
    of its customer and a walk of its keys) is made for it."""
    return key_of if limit > OFF else _mixed


def _mixed(_source: dict[str, Any]) -> str:
    return MIXED


def of_customers(customers: Customers, limit: int) -> str:
    """The partition of a written split, from its customers."""
    if limit <= OFF:
        return MIXED
    return customers[0] if customers is not None and len(customers) == 1 else MIXED


def capped(keys: Sequence[str], limit: int) -> list[str]:
    """Each record's partition once the cap applies: the largest keep their own."""
    if limit <= OFF:
        return [MIXED] * len(keys)
    counts = Counter(keys)
    if len(counts) <= limit:
        return list(keys)
    own = {k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit - 1]}
    return [k if k in own else MIXED for k in keys]
