"""The fan-out's failure semantics, without Ray: retry once elsewhere, deadline, named failures."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from seclake.cluster.fanout import SAME_SEARCHER_PAUSE, fan_out
from seclake.cluster.rendezvous import rank
from seclake.errors import LimitExceeded

SEARCHERS = ["s-a", "s-b", "s-c"]
ITEMS = [f"split-{i}" for i in range(30)]


@pytest.fixture
def pool():
    with ThreadPoolExecutor(64) as p:  # slow calls hold a thread each
        yield p


def caller(pool, behaviour):
    """call(items, searcher): one pool task running behaviour(item, searcher)
    for each item. ConnectionError fails the whole call (the searcher is
    gone); any other exception is that item's answer (that split failed)."""
    calls: list[tuple[list[str], str]] = []
    lock = threading.Lock()

    def call(items: list[str], searcher: str) -> Future:
        with lock:
            calls.append((list(items), searcher))

        def run() -> dict:
            answers = {}
            for item in items:
                try:
                    answers[item] = behaviour(item, searcher)
                except ConnectionError:
                    raise
                except Exception as e:  # noqa: BLE001 - the item's answer
                    answers[item] = e
            return answers

        return pool.submit(run)

    call.calls = calls  # type: ignore[attr-defined]
    return call


def test_all_answer_on_their_first_choice_in_one_call_per_searcher(pool):
    call = caller(pool, lambda item, s: (item, s))
    out = fan_out(ITEMS, SEARCHERS, call, timeout=10)
    assert out.failed == [] and set(out.results) == set(ITEMS)
    assert all(out.results[i][1] == rank(i, SEARCHERS)[0] for i in ITEMS)
    # 30 splits, 3 searchers: three calls, each carrying its searcher's splits.
    assert sorted(s for _, s in call.calls) == SEARCHERS and out.calls == 3
    for items, s in call.calls:
        assert sorted(items) == sorted(i for i in ITEMS if rank(i, SEARCHERS)[0] == s)


def test_a_dead_searchers_splits_are_retried_on_their_second_choice(pool):
    def behaviour(item, s):
        if s == "s-b":
            raise ConnectionError("searcher died")
        return s

    call = caller(pool, behaviour)
    out = fan_out(ITEMS, SEARCHERS, call, timeout=10)
    assert out.failed == [] and set(out.results) == set(ITEMS)
    # s-b's splits move in at most one call to each other searcher.
    retries = call.calls[3:]
    assert len(retries) == len({s for _, s in retries}) <= 2 and "s-b" not in {s for _, s in retries}
    for item in ITEMS:
        if rank(item, SEARCHERS)[0] == "s-b":
            assert out.tried[item] == ["s-b", rank(item, SEARCHERS)[1]]
        else:
            assert out.tried[item] == [rank(item, SEARCHERS)[0]]


def test_a_split_failing_on_one_searcher_moves_alone(pool):
    victim = "split-3"
    home = rank(victim, SEARCHERS)[0]

    def behaviour(item, s):
        if item == victim and s == home:
            raise OSError("cannot open split")
        return s

    call = caller(pool, behaviour)
    out = fan_out(ITEMS, SEARCHERS, call, timeout=10)
    assert out.failed == [] and set(out.results) == set(ITEMS)
    assert out.tried[victim] == [home, rank(victim, SEARCHERS)[1]]
    # The searcher answered its other splits and stays in use.
    assert all(out.results[i] == home for i in ITEMS if i != victim and rank(i, SEARCHERS)[0] == home)
    assert out.calls == 4 and call.calls[-1] == ([victim], rank(victim, SEARCHERS)[1])


def test_a_split_failing_twice_is_named_and_the_rest_answer(pool):
    def behaviour(item, s):
        if item in ("split-3", "split-7"):
            raise OSError("cannot open split")
        return s

    out = fan_out(ITEMS, SEARCHERS, caller(pool, behaviour), timeout=10)
    assert out.failed == ["split-3", "split-7"]
    assert set(out.results) == set(ITEMS) - {"split-3", "split-7"}
    assert all(len(out.tried[i]) == 2 for i in out.failed)
    # Why, for the log: the searcher of the last try and what it said.
    assert out.reasons["split-3"] == f"{out.tried['split-3'][-1]}: OSError: cannot open split"


def test_two_dead_searchers_give_a_partial_result_naming_the_lost_splits(pool):
    dead = {"s-a", "s-b"}

    def behaviour(item, s):
        if s in dead:
            raise ConnectionError("gone")
        return s

    out = fan_out(ITEMS, SEARCHERS, caller(pool, behaviour), timeout=10)
    # A split answers when its first or second try reached s-c.
    reached = {i for i in ITEMS if "s-c" in out.tried[i]}
    assert set(out.results) == reached and set(out.failed) == set(ITEMS) - reached
    assert out.failed == sorted(out.failed)
    assert all(len(out.tried[i]) <= 2 for i in ITEMS)
    assert all(out.reasons[i].endswith("the call failed: ConnectionError: gone") for i in out.failed)


def test_a_slow_searcher_is_abandoned_at_the_first_attempt_deadline(pool):
    release = threading.Event()

    def behaviour(item, s):
        if s == "s-a":
            release.wait(10)
        return s

    started = time.monotonic()
    cancelled = []
    out = fan_out(ITEMS, SEARCHERS, caller(pool, behaviour), timeout=2.0, cancel=cancelled.append)
    took = time.monotonic() - started
    release.set()
    assert out.failed == [] and set(out.results) == set(ITEMS)
    assert all(v != "s-a" for v in out.results.values())
    assert 0.9 < took < 1.9  # the retry began at half the timeout, and did not wait for s-a
    assert len(cancelled) == 1  # s-a's one call, carrying all of its splits


def test_nothing_hangs_past_the_deadline(pool):
    release = threading.Event()

    def behaviour(item, s):
        release.wait(10)
        return s

    started = time.monotonic()
    out = fan_out(ITEMS[:5], SEARCHERS, caller(pool, behaviour), timeout=1.0)
    took = time.monotonic() - started
    release.set()
    assert out.results == {} and out.failed == sorted(ITEMS[:5])
    assert took < 1.5
    # Every searcher was late at the first deadline: none was left to retry on.
    assert all(out.reasons[i].endswith("no answer within the first attempt's deadline") for i in out.failed)


def test_errors_of_the_query_itself_propagate(pool):
    def behaviour(item, s):
        raise LimitExceeded("max_clauses", 2000, 1024)

    with pytest.raises(LimitExceeded):
        fan_out(ITEMS, SEARCHERS, caller(pool, behaviour), timeout=5, is_fatal=lambda e: isinstance(e, LimitExceeded))


def test_no_searcher_fails_every_split_at_once(pool):
    out = fan_out(ITEMS, [], caller(pool, lambda i, s: s), timeout=5)
    assert out.failed == sorted(ITEMS) and out.results == {}
    assert set(out.reasons.values()) == {"no searcher is running"}


def test_a_retry_that_never_answers_is_named_at_the_deadline(pool):
    release = threading.Event()

    def behaviour(item, s):
        if s == rank(item, SEARCHERS)[0]:
            raise OSError("cannot open split")  # the first try fails at once...
        release.wait(10)  # ... and the retry hangs
        return s

    out = fan_out(ITEMS[:3], SEARCHERS, caller(pool, behaviour), timeout=1.0)
    release.set()
    assert out.results == {} and out.failed == sorted(ITEMS[:3])
    assert all(out.reasons[i] == f"{out.tried[i][1]}: no answer within the deadline (1 s)" for i in out.failed)


@pytest.mark.parametrize("failure", [ConnectionError, OSError])  # the whole call; that split only
def test_a_lone_searcher_that_fails_once_is_asked_again(pool, failure):
    seen = set()

    def behaviour(item, s):
        # The first call fails (as a whole, or split by split); the second answers.
        if item not in seen and (failure is OSError or not seen):
            seen.add(item)
            raise failure("the actor is temporarily unavailable")
        seen.update(ITEMS[:4])
        return s

    started = time.monotonic()
    out = fan_out(ITEMS[:4], ["s-a"], caller(pool, behaviour), timeout=5)
    assert out.failed == [] and out.results == {i: "s-a" for i in ITEMS[:4]}
    assert all(out.tried[i] == ["s-a", "s-a"] for i in ITEMS[:4])
    # Not at once: a passing failure gets a moment to pass.
    assert time.monotonic() - started >= SAME_SEARCHER_PAUSE


def test_a_lone_searcher_failing_twice_names_the_split_and_a_late_one_is_not_asked_again(pool):
    out = fan_out(ITEMS[:2], ["s-a"], caller(pool, lambda i, s: (_ for _ in ()).throw(OSError("gone"))), timeout=5)
    assert out.failed == sorted(ITEMS[:2]) and all(out.tried[i] == ["s-a", "s-a"] for i in ITEMS[:2])
    release = threading.Event()
    out = fan_out(ITEMS[:2], ["s-a"], caller(pool, lambda i, s: release.wait(10) and s), timeout=1.0)
    release.set()
    assert out.failed == sorted(ITEMS[:2]) and all(out.tried[i] == ["s-a"] for i in ITEMS[:2])
