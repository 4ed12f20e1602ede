"""Analytics queries run as tasks (docs/analytics.md, "Tasks"): submit, poll, fetch, cancel.

As Elasticsearch's async ES|QL queries: a query over a long range is
submitted, answered at once with a task id, and runs in a small pool of its
own (``analytics_task_workers`` threads), never on the threads that serve
HTTP calls; a poll says how far it is (records read of those matching),
and once done the same call answers the result. A task belongs to the
caller who submitted it: anyone else is told it does not exist.

Bounded: at most ``analytics_max_tasks`` tasks are kept (queued, running
or done) and ``analytics_max_tasks_per_user`` of one user; each runs at most
``analytics_task_timeout_seconds``; a finished task's result is kept
``analytics_task_keep_seconds`` after it finished, then dropped (looked for
at every submit and poll: nothing runs to sweep). Cancelling sets the
query's stop flag, which its reader looks at between pages of records, so
the work stops within a page (~10 ms), and a queued task never starts.
Queries answered at once (``ds/query``) take one of
``analytics_max_running_calls`` slots (``call``), or are refused at once.
Results are kept in memory: they are bounded by the pipeline's own limits
on rows and groups, and a restart forgets them (a client submits again).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from seclake.errors import LimitExceeded, NotFound, SeclakeError, TooManyAttempts
from seclake.service.analytics import Cancelled, Progress

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"


@dataclass
class Task:
    id: str
    owner: str
    query: str
    submitted: float  # epoch seconds
    progress: Progress
    state: str = QUEUED
    started: float | None = None
    finished: float | None = None  # monotonic, for expiry
    finished_at: float | None = None  # epoch seconds, for the reply
    result: dict[str, Any] | None = None
    error: str | None = None
    error_code: str | None = None
    future: Any = field(default=None, repr=False)

    def view(self, keep_seconds: float) -> dict[str, Any]:
        """The task as a poll answers it (without the result)."""
        took = None
        if self.started is not None:
            took = int(((self.finished_at or time.time()) - self.started) * 1000)
        out: dict[str, Any] = {
            "id": self.id,
            "state": self.state,
            "is_running": self.state in (QUEUED, RUNNING),
            "query": self.query,
            "submittedOn": int(self.submitted * 1000),
            "took": took,
            "progress": {"read": self.progress.read, "total": self.progress.total},
            "expiresOn": None if self.finished_at is None else int((self.finished_at + keep_seconds) * 1000),
        }
        if self.error is not None:
            out["error"] = self.error
        return out


class QueryTasks:
    def __init__(self, *, workers: int, max_tasks: int, max_per_user: int, keep_seconds: float,
                 timeout_seconds: float, max_calls: int = 2, clock: Callable[[], float] = time.monotonic):
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="seclake-query")
        # Queries answered at once (ds/query): each holds one of the threads every call
        # shares, and its Python work the interpreter, for up to its timeout.
        self.max_calls = max_calls
        self.calls = threading.BoundedSemaphore(max_calls)
        self.max_tasks = max_tasks
        self.max_per_user = max_per_user
        self.keep_seconds = keep_seconds
        self.timeout_seconds = timeout_seconds
        self.clock = clock
        self.tasks: dict[str, Task] = {}
        self.lock = threading.Lock()
        self.closed = False

    def submit(self, owner: str, query: str, run: Callable[[Progress], dict[str, Any]]) -> Task:
        """Queue ``run`` (given the task's progress, answering the result) for ``owner``."""
        with self.lock:
            self._expire()
            if self.closed:
                raise SeclakeError("the server is stopping")
            if len(self.tasks) >= self.max_tasks:
                raise LimitExceeded("query tasks kept on the server (setting analytics_max_tasks; fetch or "
                                    "cancel finished ones, or wait for them to expire)", len(self.tasks) + 1,
                                    self.max_tasks)
            mine = sum(1 for t in self.tasks.values() if t.owner == owner)
            if mine >= self.max_per_user:
                raise LimitExceeded("query tasks of one user (setting analytics_max_tasks_per_user; cancel one "
                                    "or wait for it to expire)", mine + 1, self.max_per_user)
            task = Task(secrets.token_hex(12), owner, query, time.time(), Progress(timeout=self.timeout_seconds))
            self.tasks[task.id] = task
        task.future = self.pool.submit(self._run, task, run)
        return task

    def _run(self, task: Task, run: Callable[[Progress], dict[str, Any]]) -> None:
        with self.lock:
            if task.state != QUEUED:  # cancelled while queued
                return
            task.state = RUNNING
        task.started = time.time()
        task.progress.deadline = time.monotonic() + self.timeout_seconds
        try:
            result = run(task.progress)
            state, error, code = DONE, None, None
        except Cancelled:
            result, state, error, code = None, CANCELLED, "the query was cancelled", Cancelled.code
        except SeclakeError as e:
            result, state, error, code = None, FAILED, e.message, e.code
        except Exception:  # noqa: BLE001 - a task's fault is its answer, and logged
            log.exception("query task %s failed", task.id)
            result, state, error, code = None, FAILED, "the query failed unexpectedly (see the server log)", "error"
        with self.lock:
            if task.state == CANCELLED:
                result, state, error, code = None, CANCELLED, "the query was cancelled", Cancelled.code
            task.result, task.state, task.error, task.error_code = result, state, error, code
            task.finished_at = time.time()
            task.finished = self.clock()
        log.info("query task %s of %s %s after %d ms, %d of %s records read%s", task.id, task.owner, state,
                 int((task.finished_at - task.started) * 1000), task.progress.read, task.progress.total,
                 f": {error}" if error and state == FAILED else "")

    @contextmanager
    def call(self) -> Iterator[None]:
        """A slot for a query answered at once; TooManyAttempts (429) when every slot is taken."""
        if not self.calls.acquire(blocking=False):
            raise TooManyAttempts(f"{self.max_calls} analytics queries are running (setting analytics_max_running_calls); "
                                  "retry in a moment, or submit it as a task (ds/query_async)", retry_after_seconds=1)
        try:
            yield
        finally:
            self.calls.release()

    def get(self, owner: str, task_id: str) -> Task:
        with self.lock:
            self._expire()
            task = self.tasks.get(task_id)
        if task is None or not secrets.compare_digest(task.owner, owner):
            raise NotFound(f"no query task {task_id[:64]!r} (it expired, or was never submitted by you)")
        return task

    def cancel(self, owner: str, task_id: str) -> Task:
        """Stop a task (a queued one never starts) or drop a finished one's result; it is
        kept, cancelled, until it expires (a failed one keeps its error)."""
        task = self.get(owner, task_id)
        with self.lock:
            if task.state in (QUEUED, RUNNING, DONE):
                task.progress.stop.set()
                if task.finished is None and task.state != RUNNING:
                    task.finished_at = time.time()
                    task.finished = self.clock()
                task.state = CANCELLED
                task.error, task.error_code = "the query was cancelled", Cancelled.code
            task.result = None
        return task

    def _expire(self) -> None:
        now = self.clock()
        for task_id in [t.id for t in self.tasks.values() if t.finished is not None
                        and now - t.finished > self.keep_seconds]:
            del self.tasks[task_id]

    def close(self) -> None:
        """Stop every task and wait for the pool (a server's stop)."""
        with self.lock:
            self.closed = True
            for task in self.tasks.values():
                task.progress.stop.set()
        self.pool.shutdown(wait=True, cancel_futures=True)
