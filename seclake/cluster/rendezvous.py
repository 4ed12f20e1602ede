"""Rendezvous (highest-random-weight) assignment of splits to searchers.

Each (split, searcher) pair gets a pseudo-random weight; a split goes to the
live searcher of highest weight. Every root computes the same assignment
from the same searcher list, so a split keeps hitting one searcher's cache.
When a searcher leaves, only its splits move (each to its second choice);
when one joins, it takes only the splits it now outranks, about 1/n of them.
The ranking also gives the retry target: the next searcher in the order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence


def weight(split_id: str, searcher_id: str) -> int:
    digest = hashlib.blake2b(f"{split_id}\x00{searcher_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rank(split_id: str, searchers: Iterable[str]) -> list[str]:
    """Searchers from the first choice for this split to the last (ties by id, so total)."""
    return sorted(searchers, key=lambda s: (-weight(split_id, s), s))


def assign(split_ids: Iterable[str], searchers: Sequence[str]) -> dict[str, str]:
    """split id -> searcher id; empty when there is no searcher."""
    if not searchers:
        return {}
    return {sid: rank(sid, searchers)[0] for sid in split_ids}
