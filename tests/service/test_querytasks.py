"""Query tasks (service/querytasks.py): a bounded pool, progress, cancel that stops
the work, results kept for a bounded time, tasks seen only by their owner."""

from __future__ import annotations

import threading
import time

import pytest

from seclake.errors import LimitExceeded, NotFound, ValidationFailed
from seclake.service.querytasks import CANCELLED, DONE, FAILED, QUEUED, RUNNING, QueryTasks


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def tasks(clock):
    pool = QueryTasks(workers=1, max_tasks=4, max_per_user=3, keep_seconds=60, timeout_seconds=30, clock=clock)
    yield pool
    pool.close()


def until(predicate, seconds: float = 10.0) -> None:
    stop = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < stop, "timed out"
        time.sleep(0.01)


def reader(release: threading.Event, pages: int = 10_000):
    """A query reading page after page, as the analytics reader does, until released."""

    def run(progress):
        progress.total = pages
        for _ in range(pages):
            progress.check()
            progress.read += 1
            if release.wait(0.005):
                break
        return {"columns": [{"name": "n", "type": "long"}], "values": [[progress.read]], "took": 1}

    return run


def test_a_task_runs_in_the_pool_shows_progress_and_answers_its_result(tasks):
    release = threading.Event()
    task = tasks.submit("ann", "| STATS n = COUNT(*)", reader(release))
    until(lambda: task.progress.read > 3)
    view = tasks.get("ann", task.id).view(tasks.keep_seconds)
    assert view["state"] == RUNNING and view["is_running"] and view["progress"]["total"] == 10_000
    assert view["expiresOn"] is None
    release.set()
    until(lambda: task.state == DONE)
    view = task.view(tasks.keep_seconds)
    assert not view["is_running"] and view["expiresOn"] >= view["submittedOn"] + 60_000
    assert task.result["values"][0][0] == task.progress.read


def test_a_task_is_seen_by_its_owner_only(tasks):
    task = tasks.submit("ann", "q", lambda p: {"columns": [], "values": [], "took": 0})
    with pytest.raises(NotFound):
        tasks.get("bob", task.id)
    with pytest.raises(NotFound):
        tasks.cancel("bob", task.id)
    with pytest.raises(NotFound):
        tasks.get("ann", "0" * 24)


def test_cancelling_stops_the_work_and_a_queued_task_never_starts(tasks):
    release = threading.Event()
    running = tasks.submit("ann", "q1", reader(release))
    started = []
    queued = tasks.submit("ann", "q2", lambda p: started.append(1) or {})
    until(lambda: running.state == RUNNING)
    assert queued.state == QUEUED  # one worker
    tasks.cancel("ann", queued.id)
    tasks.cancel("ann", running.id)
    until(lambda: running.finished is not None)
    read = running.progress.read
    time.sleep(0.05)
    assert running.progress.read == read < 10_000, "the reader stopped"
    assert (running.state, running.result, running.error) == (CANCELLED, None, "the query was cancelled")
    tasks.pool.submit(lambda: None).result()  # the queue has drained
    assert queued.state == CANCELLED and not started


def test_a_failed_task_says_why(tasks):
    def run(progress):
        raise ValidationFailed("query", "bad")

    task = tasks.submit("ann", "q", run)
    until(lambda: task.state == FAILED)
    assert task.view(60)["error"] == "query: bad" and task.error_code == "invalid"


def test_an_unexpected_fault_is_a_failed_task_and_logged(tasks, caplog):
    task = tasks.submit("ann", "q", lambda p: 1 / 0)
    until(lambda: task.state == FAILED)
    assert "unexpectedly" in task.error and "ZeroDivisionError" in caplog.text


def test_finished_tasks_expire_after_the_keep_time(tasks, clock):
    task = tasks.submit("ann", "q", lambda p: {"columns": [], "values": [], "took": 0})
    until(lambda: task.state == DONE)
    clock.now += 59
    assert tasks.get("ann", task.id) is task
    clock.now += 2
    with pytest.raises(NotFound):
        tasks.get("ann", task.id)
    assert not tasks.tasks


def test_tasks_are_bounded_per_user_and_in_all(tasks):
    release = threading.Event()
    try:
        for _ in range(3):
            tasks.submit("ann", "q", reader(release))
        with pytest.raises(LimitExceeded, match="analytics_max_tasks_per_user"):
            tasks.submit("ann", "q", reader(release))
        tasks.submit("bob", "q", reader(release))
        with pytest.raises(LimitExceeded, match="analytics_max_tasks"):
            tasks.submit("cid", "q", reader(release))
    finally:
        release.set()


def test_a_task_past_its_time_stops(clock):
    pool = QueryTasks(workers=1, max_tasks=4, max_per_user=4, keep_seconds=60, timeout_seconds=0.05, clock=clock)
    try:
        task = pool.submit("ann", "q", reader(threading.Event()))
        until(lambda: task.state == FAILED)
        assert "stopped after 0.05 s" in task.error and task.progress.read < 10_000
    finally:
        pool.close()


def test_closing_stops_running_tasks(clock):
    pool = QueryTasks(workers=1, max_tasks=4, max_per_user=4, keep_seconds=60, timeout_seconds=30, clock=clock)
    task = pool.submit("ann", "q", reader(threading.Event()))
    until(lambda: task.state == RUNNING)
    started = time.monotonic()
    pool.close()
    assert time.monotonic() - started < 5 and task.state == CANCELLED
