"""Threshold windows: count, sum, distinct; eviction, one firing per burst, late records, JSON state."""

from __future__ import annotations

import json
import random

import pytest

from seclake.detect.rule import Threshold
from seclake.detect.signal import MAX_SUM_ENTRIES, Window

S = 1000
COUNT = Threshold("count", None, 60 * S, 3)
SUM = Threshold("sum", "txB", 60 * S, 100.0, "@fields.txB")
DISTINCT = Threshold("distinct", "dp", 60 * S, 3, "@fields.dp")


def feed(w: Window, events: list[tuple[int, object]]) -> list[tuple[int, float]]:
    """(index, aggregate) of every firing."""
    return [(i, got) for i, (ts, v) in enumerate(events) if (got := w.observe(ts, v)) is not None]


def test_count_fires_on_reaching_value_then_restarts_empty() -> None:
    w = Window(COUNT)
    assert feed(w, [(0, 1), (10 * S, 1), (20 * S, 1)]) == [(2, 3.0)]
    assert w.is_empty()
    # A burst of 7 fires twice (at the 3rd and 6th), not on every record after the 3rd.
    w = Window(COUNT)
    assert [i for i, _ in feed(w, [(k * S, 1) for k in range(7)])] == [2, 5]


def test_count_evicts_entries_older_than_the_window() -> None:
    w = Window(COUNT)
    assert feed(w, [(0, 1), (30 * S, 1), (61 * S, 1)]) == []  # 0 left when 61 came
    assert w.observe(62 * S) == 3.0  # 30, 61, 62
    # Exactly window_ms apart still counts (the window is inclusive).
    w = Window(COUNT)
    assert feed(w, [(0, 1), (30 * S, 1), (60 * S, 1)]) == [(2, 3.0)]


def test_count_ignores_the_value() -> None:
    w = Window(COUNT)
    assert feed(w, [(0, None), (1, "x"), (2, 0)]) == [(2, 3.0)]


def test_out_of_order_within_the_window_counts() -> None:
    w = Window(COUNT)
    assert w.observe(50 * S) is None
    assert w.observe(20 * S) is None  # earlier, but within 60 s of the newest
    assert w.observe(40 * S) == 3.0


def test_late_record_older_than_the_window_is_ignored() -> None:
    w = Window(COUNT)
    assert w.observe(100 * S) is None
    assert w.observe(30 * S) is None  # 70 s before the newest: its window has passed
    assert w.observe(101 * S) is None
    assert w.to_json()["entries"] == [100 * S, 101 * S]
    # A late record does not push newer entries out either.
    w = Window(COUNT)
    w.observe(100 * S)
    w.observe(90 * S)
    assert w.to_json()["entries"] == [90 * S, 100 * S]


def test_sum() -> None:
    w = Window(SUM)
    assert feed(w, [(0, 40), (10 * S, 40.5), (20 * S, None), (30 * S, "x"), (40 * S, True)]) == []
    assert w.observe(50 * S, 19.5) == 100.0
    assert w.is_empty()
    w = Window(SUM)
    assert feed(w, [(0, 60), (61 * S, 50)]) == []  # the 60 left before 50 came
    assert w.observe(62 * S, float("nan")) is None
    assert w.observe(62 * S, 50) == 100.0


def test_sum_state_is_capped_without_losing_amounts() -> None:
    w = Window(Threshold("sum", "b", 3600 * S, 1e12, "@fields.b"))
    for k in range(MAX_SUM_ENTRIES + 500):
        assert w.observe(k, 1.0) is None
    state = w.to_json()
    assert len(state["entries"]) == MAX_SUM_ENTRIES
    assert sum(a for _, a in state["entries"]) == MAX_SUM_ENTRIES + 500


def test_distinct() -> None:
    w = Window(DISTINCT)
    assert feed(w, [(0, "22"), (1 * S, "22"), (2 * S, "80"), (3 * S, None)]) == []
    assert w.observe(4 * S, "443") == 3.0
    assert w.is_empty()


def test_distinct_evicts_by_last_sighting() -> None:
    w = Window(DISTINCT)
    feed(w, [(0, "22"), (10 * S, "80"), (55 * S, "22")])  # 22 seen again: stays
    assert w.observe(75 * S, "8080") is None  # 80 (at 10 s) left
    assert sorted(v for v, _ in w.to_json()["entries"]) == ["22", "8080"]
    assert w.observe(76 * S, "443") == 3.0


def test_distinct_state_never_exceeds_value() -> None:
    w = Window(Threshold("distinct", "p", 60 * S, 100, "@fields.p"))
    for k in range(10_000):
        w.observe(k, str(k))
        assert len(w.to_json()["entries"]) < 100


def test_count_state_never_exceeds_value() -> None:
    w = Window(Threshold("count", None, 3600 * S, 10, None))
    for k in range(1000):
        w.observe(k)
        assert len(w.to_json()["entries"]) < 10


def test_non_integer_timestamps_are_ignored() -> None:
    w = Window(COUNT)
    assert w.observe(True) is None and w.observe("5") is None and w.observe(1.5) is None  # type: ignore[arg-type]
    assert w.is_empty()


def test_newest_is_the_time_of_the_newest_entry() -> None:
    w = Window(COUNT)
    assert w.newest() is None
    w.observe(100 * S)
    w.observe(90 * S)  # late, within the window
    assert w.newest() == 100 * S
    d = Window(Threshold("distinct", "dp", 60 * S, 10, "@fields.dp"))
    d.observe(5 * S, "a")
    d.observe(7 * S, "b")
    d.observe(6 * S, "a")
    assert d.newest() == 7 * S


def _random_events(rnd: random.Random, n: int, kind: str) -> list[tuple[int, object]]:
    t = 0
    out: list[tuple[int, object]] = []
    for _ in range(n):
        t += rnd.randint(0, 15 * S)
        ts = t - rnd.randint(0, 70 * S) if rnd.random() < 0.2 else t  # some late, some too late
        value: object = 1
        if kind == "sum":
            value = rnd.choice([rnd.uniform(0, 40), None, 7])
        elif kind == "distinct":
            value = rnd.choice(["22", "80", "443", "8080", None])
        out.append((ts, value))
    return out


@pytest.mark.parametrize("threshold", [COUNT, SUM, DISTINCT], ids=lambda t: t.function)
@pytest.mark.parametrize("seed", range(20))
def test_json_round_trip_restores_identical_behaviour(threshold: Threshold, seed: int) -> None:
    rnd = random.Random(seed)
    events = _random_events(rnd, 300, threshold.function)
    straight = Window(threshold)
    expected = feed(straight, events)
    # Cut the stream anywhere, save and restore through JSON text (the database
    # column), and go on: the firings are the same as without the restart.
    for cut in (1, 17, 150, 299):
        w = Window(threshold)
        first = feed(w, events[:cut])
        restored = Window.from_json(threshold, json.loads(json.dumps(w.to_json())))
        rest = [(i + cut, got) for i, got in feed(restored, events[cut:])]
        assert first + rest == expected


@pytest.mark.parametrize("threshold", [COUNT, SUM, DISTINCT], ids=lambda t: t.function)
def test_same_observations_same_firings(threshold: Threshold) -> None:
    events = _random_events(random.Random(99), 500, threshold.function)
    assert feed(Window(threshold), events) == feed(Window(threshold), events)


def test_dropping_an_empty_window_changes_nothing() -> None:
    events = _random_events(random.Random(5), 400, "count")
    expected = feed(Window(COUNT), events)
    w = Window(COUNT)
    got = []
    for i, (ts, v) in enumerate(events):
        if w.is_empty():
            w = Window(COUNT)  # what the detector does when it saves: empty windows are deleted
        if (agg := w.observe(ts, v)) is not None:
            got.append((i, agg))
    assert got == expected


@pytest.mark.parametrize(
    "state",
    [
        None, [], "x", {"v": 2}, {"v": 1, "function": "count", "windowMs": 60 * S, "value": 3, "entries": "x"},
        {"v": 1, "function": "sum", "windowMs": 60 * S, "value": 3, "entries": [1]},  # another threshold's
        {"v": 1, "function": "count", "windowMs": 60 * S, "value": 3, "entries": ["a", None, True, 5, 7, 9, 11]},
    ],
)
def test_from_json_is_forgiving(state: object) -> None:
    w = Window.from_json(COUNT, state)
    assert len(w.to_json()["entries"]) <= 2  # never more than can be held without firing
    w.observe(0)


def test_from_json_of_a_changed_rule_starts_empty() -> None:
    w = Window(COUNT)
    w.observe(0)
    w.observe(1)
    changed = Threshold("count", None, 120 * S, 3, None)
    assert Window.from_json(changed, w.to_json()).is_empty()
    assert not Window.from_json(COUNT, w.to_json()).is_empty()
