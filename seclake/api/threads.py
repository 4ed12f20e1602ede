"""The threads the HTTP interface runs blocking work in (searches, imports, the database).

The event loop must not block, so every call's handler runs in one of these
threads. Written here rather than with Starlette's ``run_in_threadpool``
(anyio's ``to_thread``): per request that one enters a cancel scope, takes
and gives back a capacity limiter token and looks up the async library
several times, ~6% of the server's interpreter time on a search answering in
a few milliseconds (py-spy over the bench's CIDR class), where
``loop.run_in_executor`` hands the function to a thread pool and awaits its
future. The same limit of threads as anyio's default (40) and the same
context: the function sees the request's context variables (the log's
request fields, ``logformat.REQUEST``).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# anyio's default: more blocking calls than this at once wait for a thread.
THREADS = 40

_pool = ThreadPoolExecutor(THREADS, thread_name_prefix="seclake-call")


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a call thread, with the caller's context variables; its result or its exception."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_pool, context.run, fn, *args)
