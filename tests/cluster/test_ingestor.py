"""The ingestor mailbox without Ray: an append is answered only once the ingest node settles it.

The actor's methods are plain coroutines, driven here on one event loop as
Ray drives them on the actor's loop. Forwarding over a real Ray cluster is
tested in test_ray_cluster.py.
"""

from __future__ import annotations

import asyncio

from seclake.cluster import ingestor as ingestor_module
from seclake.cluster.ingestor import Ingestor
from seclake.errors import Unavailable

ITEMS = [("event", {"@timestamp": 1, "msg": "a"}), ("event", {"@timestamp": 2, "msg": "b"})]


def run(coro):
    return asyncio.run(coro)


def test_an_append_waits_for_the_ingest_node_and_returns_its_docids():
    async def scenario():
        box = Ingestor()
        call = asyncio.ensure_future(box.append(ITEMS, 5.0))
        taken = await box.take(1.0)
        assert [items for _, items, _ in taken] == [ITEMS]
        await asyncio.sleep(0.05)
        assert not call.done()  # not acknowledged before the ingest node says it is stored
        await box.settle(taken[0][0], ("ok", (10, 11)))
        return await call, await box.info()

    answer, info = run(scenario())
    assert answer == ("ok", (10, 11))
    assert info["appended"] == 1 and info["waiting"] == 0 and info["taken"] == 0


def test_an_append_nobody_took_in_time_is_withdrawn_and_says_nothing_was_stored():
    async def scenario():
        box = Ingestor()
        answer = await box.append(ITEMS, 0.1)
        return answer, await box.take(0.01)

    (status, error), later = run(scenario())
    assert status == "error" and isinstance(error, Unavailable)
    assert "did not take the import within 0.1 s" in error.message and "nothing was stored" in error.message
    assert later == []  # withdrawn: the ingest node never stores it


def test_an_append_taken_before_the_deadline_waits_for_its_outcome():
    async def scenario():
        box = Ingestor()
        call = asyncio.ensure_future(box.append(ITEMS, 0.1))
        taken = await box.take(1.0)
        await asyncio.sleep(0.3)  # past the caller's deadline, while being stored
        await box.settle(taken[0][0], ("ok", (1, 2)))
        return await call

    assert run(scenario()) == ("ok", (1, 2))


def test_an_ingest_node_that_stopped_polling_is_refused_at_once(monkeypatch):
    monkeypatch.setattr(ingestor_module, "STALE_SECONDS", 0.05)

    async def scenario():
        box = Ingestor()
        await asyncio.sleep(0.1)
        return await box.append(ITEMS, 5.0)

    status, error = run(scenario())
    assert status == "error" and "has not taken imports" in error.message


def test_errors_of_the_ingest_node_reach_the_caller():
    async def scenario():
        box = Ingestor()
        call = asyncio.ensure_future(box.append(ITEMS, 5.0))
        (batch_id, _, _), = await box.take(1.0)
        await box.settle(batch_id, ("fault", "disk full"))
        return await call

    assert run(scenario()) == ("fault", "disk full")


def test_batches_waiting_together_are_taken_together_in_order():
    n = 3

    async def scenario():
        box = Ingestor()
        calls = [asyncio.ensure_future(box.append([("event", {"i": i})], 5.0)) for i in range(n)]
        await asyncio.sleep(0)
        taken = await box.take(1.0)
        for k, (batch_id, _, _) in enumerate(taken):
            await box.settle(batch_id, ("ok", (k, k)))
        return taken, [await c for c in calls]

    taken, answers = run(scenario())
    assert [items[0][1]["i"] for _, items, _ in taken] == list(range(n))
    assert answers == [("ok", (k, k)) for k in range(n)]


def test_an_ingest_node_busy_storing_a_batch_is_not_taken_for_stuck(monkeypatch):
    monkeypatch.setattr(ingestor_module, "STALE_SECONDS", 0.05)

    async def scenario():
        box = Ingestor()
        first = asyncio.ensure_future(box.append(ITEMS, 5.0))
        (batch_id, _, _), = await box.take(1.0)
        await asyncio.sleep(0.1)  # a long append: no polling meanwhile
        second = asyncio.ensure_future(box.append(ITEMS, 5.0))
        await box.settle(batch_id, ("ok", (1, 2)))
        (second_id, _, _), = await box.take(1.0)
        await box.settle(second_id, ("ok", (3, 4)))
        return await first, await second

    assert run(scenario()) == (("ok", (1, 2)), ("ok", (3, 4)))


def test_an_idempotency_key_travels_with_its_batch_to_the_ingest_node():
    request = {"scope": "user:1:0", "key": "k1", "digest": "d" * 64, "reply": {"accepted": 2}, "records": 2}

    async def scenario():
        box = Ingestor()
        call = asyncio.ensure_future(box.append(ITEMS, 5.0, request))
        (batch_id, items, sent), = await box.take(1.0)
        await box.settle(batch_id, ("ok", (5, 6, {"accepted": 2}, True)))
        return items, sent, await call

    items, sent, answer = run(scenario())
    assert items == ITEMS and sent == request
    assert answer == ("ok", (5, 6, {"accepted": 2}, True))
