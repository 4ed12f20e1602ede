"""Shown record ids: a keyed permutation of log sequences (record/identity.py)."""

from __future__ import annotations

import os

from seclake.record.identity import RecordIds, record_id


def test_shown_ids_are_unique_reversible_and_js_safe():
    ids = RecordIds(os.urandom(32))
    seqs = list(range(1, 20_001)) + [2**40 + 7, 2**52 - 1]
    shown = [ids.number(n) for n in seqs]
    assert len(set(shown)) == len(seqs), "a permutation: no two records share an id"
    assert [ids.sequence(n) for n in shown] == seqs
    assert all(0 <= n < 2**52 for n in shown), "exact in a JavaScript number"
    # Consecutive sequences land far apart, in no order.
    steps = [abs(b - a) for a, b in zip(shown, shown[1:])]
    assert sorted(steps)[len(steps) // 100] > 2**30
    assert ids.text(5) == record_id(ids.number(5))


def test_the_key_decides_the_ids_and_no_key_shows_the_sequence():
    key = os.urandom(32)
    assert RecordIds(key).number(42) == RecordIds(key).number(42)
    assert RecordIds(key).number(42) != RecordIds(os.urandom(32)).number(42)
    plain = RecordIds(None)
    assert (plain.number(42), plain.sequence(42), plain.text(42)) == (42, 42, "000000000000002a")
