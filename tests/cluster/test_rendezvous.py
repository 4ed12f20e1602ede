"""Rendezvous assignment: deterministic, balanced, minimal movement on join and leave."""

from __future__ import annotations

from collections import Counter

from seclake.cluster.rendezvous import assign, rank

SPLITS = [f"event-2026{m:02d}{d:02d}-{i:04x}" for m in range(1, 4) for d in range(1, 29) for i in range(4)]
SEARCHERS = [f"searcher-node{n}-{i}" for n in range(4) for i in range(2)]


def test_assignment_is_deterministic_and_independent_of_list_order():
    a = assign(SPLITS, SEARCHERS)
    b = assign(SPLITS, list(reversed(SEARCHERS)))
    assert a == b
    assert set(a) == set(SPLITS) and set(a.values()) <= set(SEARCHERS)


def test_assignment_is_balanced():
    counts = Counter(assign(SPLITS, SEARCHERS).values())
    mean = len(SPLITS) / len(SEARCHERS)
    assert len(counts) == len(SEARCHERS)
    assert max(counts.values()) < 1.6 * mean and min(counts.values()) > 0.5 * mean, counts


def test_a_searcher_leaving_moves_only_its_splits_to_their_second_choice():
    before = assign(SPLITS, SEARCHERS)
    gone = SEARCHERS[3]
    after = assign(SPLITS, [s for s in SEARCHERS if s != gone])
    for split in SPLITS:
        if before[split] == gone:
            assert after[split] == rank(split, SEARCHERS)[1]
        else:
            assert after[split] == before[split]


def test_a_searcher_joining_takes_only_splits_and_about_its_share():
    before = assign(SPLITS, SEARCHERS)
    new = "searcher-node9-0"
    after = assign(SPLITS, SEARCHERS + [new])
    moved = [s for s in SPLITS if after[s] != before[s]]
    assert all(after[s] == new for s in moved)
    share = len(SPLITS) / (len(SEARCHERS) + 1)
    assert 0.5 * share < len(moved) < 1.6 * share


def test_rank_lists_every_searcher_once():
    for split in SPLITS[:20]:
        r = rank(split, SEARCHERS)
        assert sorted(r) == sorted(SEARCHERS) and r[0] == assign([split], SEARCHERS)[split]


def test_no_searcher_assigns_nothing():
    assert assign(SPLITS, []) == {}
