"""The threads the HTTP interface runs blocking work in (searches, imports, the database).

The event loop must not block, so every call's handler runs in one of these
threads, with the request's context variables (the log's request fields,
``logformat.REQUEST``), up to ``THREADS`` at once (anyio's default; more
wait for a thread).

Written here rather than with Starlette's ``run_in_threadpool`` (anyio's
``to_thread``), nor with ``loop.run_in_executor``: per request the first
enters a cancel scope, takes and gives back a capacity limiter token and
looks up the async library several times (~6% of the server's interpreter
time on a search answering in a few milliseconds: py-spy over the bench's
CIDR class); the second makes a ``concurrent.futures.Future`` (a condition
and its lock), a work item, an asyncio future chained to it with callbacks
both ways, and takes the pool's idle semaphore: 95-103 µs per hop of a
trivial function against 44-45 here, where a thread takes the call from a
queue and hands its outcome straight to the loop's future.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")

# anyio's default: more blocking calls than this at once wait for a thread.
THREADS = 40


class _Threads:
    """Threads started as calls need them, up to ``THREADS``, each taking calls from one queue."""

    def __init__(self, limit: int):
        self.limit = limit
        self.calls: SimpleQueue = SimpleQueue()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.idle = 0
        # Joined at the interpreter's exit like a ThreadPoolExecutor's (the same hook: it runs
        # before non-daemon threads are waited for), so a call under way, an import whose
        # client went away, still ends its write.
        threading._register_atexit(self.stop)  # type: ignore[attr-defined]

    def put(self, call: tuple) -> None:
        with self.lock:
            if self.idle == 0 and len(self.threads) < self.limit:
                thread = threading.Thread(target=self._work, name=f"seclake-call_{len(self.threads)}", daemon=True)
                self.threads.append(thread)
                thread.start()
            else:
                self.idle -= 1  # the call this put takes an idle thread for
        self.calls.put(call)

    def _work(self) -> None:
        while True:
            call = self.calls.get()
            if call is None:
                return
            loop, future, context, fn, args = call
            try:
                outcome, error = context.run(fn, *args), None
            except BaseException as e:  # noqa: BLE001 - raised in the awaiting coroutine
                outcome, error = None, e
            try:
                loop.call_soon_threadsafe(_settle, future, outcome, error)
            except RuntimeError:
                pass  # the loop closed meanwhile: nobody awaits the outcome
            del call, future, outcome, error
            with self.lock:
                self.idle += 1

    def stop(self) -> None:
        for _ in self.threads:
            self.calls.put(None)
        for thread in self.threads:
            thread.join()


def _settle(future: asyncio.Future, outcome: Any, error: BaseException | None) -> None:
    if future.cancelled():  # the request went away (its client disconnected)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(outcome)


_threads = _Threads(THREADS)


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a call thread, with the caller's context variables; its result or its exception."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    _threads.put((loop, future, contextvars.copy_context(), fn, args))
    return await future
