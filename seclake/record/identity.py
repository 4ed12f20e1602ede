"""Record ids: the write-ahead log sequence, and how callers see it (``docId``, ``_id``).

The sequence is assigned once, when a record is accepted, and survives
merges and restarts, so ids made from it are stable. Inside seclake it
orders ties and names records; callers see it through ``RecordIds``, a
keyed permutation, because the sequence is global: the gaps between one
customer's ids showed how much every other customer sent. ``_id`` is the
shown number as 16 hex digits; both stay JSON-safe integers (52 bits).
"""

from __future__ import annotations

import hashlib


def record_id(docid: int) -> str:
    return f"{docid:016x}"


class RecordIds:
    """The ids callers see for log sequences: a 4-round Feistel permutation
    of the low 52 bits keyed by the deployment's ``record_ids`` key (a
    bijection, so ids stay unique and stable), or the sequence itself when
    ``key`` is None (setting ``opaque_record_ids`` false).

    Written here because it is a few lines over hashlib's keyed BLAKE2; the
    permutation only has to hide order and gaps, not resist a cryptanalyst
    with chosen inputs (callers cannot choose sequences)."""

    HALF = 26
    MASK = (1 << HALF) - 1
    ROUNDS = 4

    def __init__(self, key: bytes | None):
        self.key = key
        # Copying a keyed state is faster than keying a new one per round.
        self._keyed = hashlib.blake2b(key=key, digest_size=4) if key is not None else None

    def _round(self, n: int, half: int) -> int:
        h = self._keyed.copy()  # type: ignore[union-attr]
        h.update((half << 8 | n).to_bytes(5, "big"))
        return int.from_bytes(h.digest(), "big") & self.MASK

    def number(self, seq: int) -> int:
        """The docId (or behavior sequence) shown for log sequence ``seq``."""
        if self.key is None:
            return seq
        high, low = seq >> (2 * self.HALF), seq & ((1 << 2 * self.HALF) - 1)
        left, right = low >> self.HALF, low & self.MASK
        for n in range(self.ROUNDS):
            left, right = right, left ^ self._round(n, right)
        return (high << (2 * self.HALF)) | (left << self.HALF) | right

    def sequence(self, number: int) -> int:
        """The log sequence of a shown number (the inverse of ``number``)."""
        if self.key is None:
            return number
        high, low = number >> (2 * self.HALF), number & ((1 << 2 * self.HALF) - 1)
        left, right = low >> self.HALF, low & self.MASK
        for n in reversed(range(self.ROUNDS)):
            left, right = right ^ self._round(n, left), left
        return (high << (2 * self.HALF)) | (left << self.HALF) | right

    def text(self, seq: int) -> str:
        """The ``_id`` shown for log sequence ``seq``."""
        return record_id(self.number(seq))
