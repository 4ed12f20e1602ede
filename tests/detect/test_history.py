"""The behavior history past its memory: the same flags at every size, memory bounded."""

from __future__ import annotations

import random

from seclake.detect.history import History


def _observations(n: int, seed: int = 5) -> list[tuple[str, str, str, str]]:
    rng = random.Random(seed)
    # Keys come back (a few hot ones, a long tail), as hosts and users do.
    return [
        (rng.choice(("acme", "globex")), rng.choice(("host", "user")),
         f"k{int(rng.paretovariate(0.7)) % 400}", rng.choice(("Failed Login", "New Admin", "Port Scan")))
        for _ in range(n)
    ]


def test_a_small_history_gives_the_flags_of_a_whole_one_across_saves_a_failed_save_and_a_restart(db):
    reference = History()  # everything in memory
    small = History(db.session, capacity=20)
    flags_ref, flags_small = [], []
    for i, (customer, key_type, key, behavior) in enumerate(_observations(3000)):
        flags_ref.append(reference.observe(customer, key_type, key, behavior))
        flags_small.append(small.observe(customer, key_type, key, behavior))
        if i % 97 == 96:
            new = small.new()
            if i % 5 == 0:  # the database refused: saved with the next ones
                continue
            with db.session(write=True) as s:
                History.save(s, new)
            small.saved(new)
        if i == 2000:  # a restart: what memory holds comes from the tables
            with db.session(write=True) as s:
                History.save(s, small.new())
            small = History(db.session, capacity=20)
            with db.session() as s:
                small.load(s)
            assert not small.keys.complete  # more saved than it holds: misses ask the tables
    assert flags_small == flags_ref
    firsts = sum(f["KeyBehaviorFirstSeen"] for f in flags_ref)
    assert 100 < firsts < 2000  # both kinds of answer were given many times
    assert len(small.keys.recent) <= 20 and len(small.key_behaviors.recent) <= 20
    assert small.dropped > 0


def test_a_history_that_fits_never_asks_the_tables(db):
    asked = []

    def session():
        asked.append(1)
        return db.session()

    history = History(session, capacity=10_000)
    with db.session() as s:
        history.load(s)
    for customer, key_type, key, behavior in _observations(500):
        history.observe(customer, key_type, key, behavior)
    assert asked == [] and history.dropped == 0 and history.keys.complete
