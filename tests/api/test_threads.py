"""The threads the HTTP interface runs blocking work in (``api/threads.py``)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from seclake.api.threads import in_thread
from seclake.errors import ValidationFailed

REQUEST: contextvars.ContextVar[str | None] = contextvars.ContextVar("request", default=None)


def test_work_runs_off_the_event_loop_with_the_callers_context_and_its_errors_come_back():
    def work(n: int) -> tuple[str, str | None, int]:
        return threading.current_thread().name, REQUEST.get(), n * 2

    async def call(request_id: str) -> tuple[str, str | None, int]:
        REQUEST.set(request_id)  # as the dispatcher sets the log's request fields
        return await in_thread(work, 21)

    async def main():
        loop_thread = threading.current_thread().name
        answers = await asyncio.gather(call("a"), call("b"))
        return loop_thread, answers

    loop_thread, answers = asyncio.run(main())
    assert [(rid, n) for _name, rid, n in answers] == [("a", 42), ("b", 42)]
    assert all(name.startswith("seclake-call") and name != loop_thread for name, _rid, _n in answers)

    def refuse() -> None:
        raise ValidationFailed("kargs.size", "must be at most 10000")

    with pytest.raises(ValidationFailed, match="kargs.size: must be at most 10000"):
        asyncio.run(in_thread(refuse))


def test_calls_run_side_by_side():
    # Two calls that each wait for the other: they deadlock unless each has a thread of its own.
    barrier = threading.Barrier(2, timeout=10)

    async def main():
        return await asyncio.gather(in_thread(barrier.wait), in_thread(barrier.wait))

    assert sorted(asyncio.run(main())) == [0, 1]


def test_a_call_whose_request_went_away_still_ends_and_its_thread_serves_the_next():
    started, release, ended = threading.Event(), threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        ended.set()
        return "late"

    async def main():
        task = asyncio.ensure_future(in_thread(slow))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()  # the client disconnected
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        while not ended.is_set():
            await asyncio.sleep(0.01)
        return await asyncio.gather(*(in_thread(str, n) for n in range(5)))

    assert asyncio.run(main()) == ["0", "1", "2", "3", "4"]
