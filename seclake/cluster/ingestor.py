"""The ingestor: the ingest node's mailbox on Ray, through which every API node's imports reach the lake.

One API node owns the lake (setting ``ingest``): the write-ahead log, the
detector and its state, the indexer. Ray cannot run an actor inside that
node's own process, and moving the lake into an actor would split it from
the calls (stats, demo loading, backfill) that use it in process. So the
actor is a mailbox: a read-only API node parses an import itself and calls
``Ingestor.append(items)``; the ingest node's ``IngestorHost`` thread takes
the waiting batches, appends each through the same ``Ingestion`` path as a
local import (detection and the fsynced log append under one lock), and
settles it with the docIds. ``append`` answers only then, so a forwarded
import is acknowledged on the same promise as a local one, and detection
runs once, in one place, whichever node took the import.

The actor is named ``INGESTOR`` in the deployment's namespace, pinned to the
ingest node and *owned* by its server process (not detached, never
restarted): when that process dies the actor dies with it, and read-only
nodes are told at once that no ingest node is running, instead of queueing
records nobody will store.

Deadlines are kept by the actor, so its answer is the truth: a batch not yet
taken when the caller's time is up is withdrawn (nothing stored); a batch
already taken is being appended and its outcome is awaited.

A batch may carry an idempotency key (``service/idempotency.py``): the host
stores it through ``Ingestion.append_once``, so the ingest node, the one
writer, decides whether it is new, a replay (its remembered reply comes
back, nothing stored), a key reused for other records (422) or one still
in flight (409) — whichever API node the retry reached.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from seclake.cluster import INGESTOR, NAMESPACE, current_node_id
from seclake.errors import SeclakeError, Unavailable

log = logging.getLogger("seclake.cluster")

# How long one ``take`` waits for work; the host notices a stop this often.
POLL_SECONDS = 1.0
# An ingest node that has not polled for this long is not taking imports (a
# wedged host thread): refuse at once rather than queue.
STALE_SECONDS = 15.0
# How long a restarting ingest node waits for Ray to free the name of its
# crashed predecessor's ingestor.
NAME_WAIT_SECONDS = 60.0


@dataclass
class Batch:
    id: int
    items: list
    done: asyncio.Future
    # The idempotency key request (``idempotency.attempt``), or None.
    request: dict | None = None
    taken: bool = False
    arrived: float = field(default_factory=time.monotonic)


class Ingestor:
    """Made a Ray actor (async) by ``IngestorHost``; plain methods, so tests can drive it in an event loop."""

    def __init__(self) -> None:
        self._waiting: deque[Batch] = deque()
        self._taken: dict[int, Batch] = {}
        self._next_id = 0
        self._polled_at = time.monotonic()
        self._signal: asyncio.Event | None = None
        self.appended = 0  # batches settled as stored (for info and tests)

    def _event(self) -> asyncio.Event:
        # Created on the actor's loop, at first use.
        if self._signal is None:
            self._signal = asyncio.Event()
        return self._signal

    async def append(self, items: list, wait: float, request: dict | None = None) -> tuple[str, Any]:
        """Store ``items`` through the ingest node; ("ok", (first, last)) once they are durable.

        With an idempotency ``request``: ("ok", a ``Stored`` as a tuple).
        """
        idle = time.monotonic() - self._polled_at
        # Not polling while storing a batch is being busy, not being stuck.
        if idle > STALE_SECONDS and not self._taken:
            return ("error", Unavailable(
                f"the ingest node has not taken imports for {idle:.0f} s; nothing was stored"
            ))
        batch = Batch(self._next_id, items, asyncio.get_running_loop().create_future(), request)
        self._next_id += 1
        self._waiting.append(batch)
        self._event().set()
        try:
            return await asyncio.wait_for(asyncio.shield(batch.done), wait)
        except asyncio.TimeoutError:
            if not batch.taken:
                self._waiting.remove(batch)
                return ("error", Unavailable(
                    f"the ingest node did not take the import within {wait:g} s (it is busy or stuck); "
                    "nothing was stored"
                ))
            # Being appended: its outcome, whatever it is, is the answer.
            return await batch.done

    async def take(self, wait: float = POLL_SECONDS) -> list[tuple[int, list, dict | None]]:
        """The batches waiting (after at most ``wait`` seconds of none); they are now being stored."""
        self._polled_at = time.monotonic()
        event = self._event()
        if not self._waiting:
            event.clear()
            try:
                await asyncio.wait_for(event.wait(), wait)
            except asyncio.TimeoutError:
                pass
        self._polled_at = time.monotonic()
        out = []
        while self._waiting:
            batch = self._waiting.popleft()
            batch.taken = True
            self._taken[batch.id] = batch
            out.append((batch.id, batch.items, batch.request))
        return out

    async def settle(self, batch_id: int, outcome: tuple[str, Any]) -> None:
        batch = self._taken.pop(batch_id, None)
        if batch is not None and not batch.done.done():
            if outcome[0] == "ok":
                self.appended += 1
            batch.done.set_result(outcome)

    async def info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "node_id": current_node_id(),
            "waiting": len(self._waiting),
            "taken": len(self._taken),
            "appended": self.appended,
            "idle_seconds": time.monotonic() - self._polled_at,
        }


class IngestorHost:
    """The ingest node's side: starts the ingestor on this node and stores what it is given.

    A component of the ingest node's ``Services`` (started after the lake and
    the detector, so forwarded imports wait for the log replay like local
    ones). ``ingestion`` is the node's ``Ingestion``.
    """

    def __init__(self, ingestion, namespace: str = NAMESPACE):
        self.ingestion = ingestion
        self.namespace = namespace
        self.handle: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = ray.get_runtime_context().get_node_id()
        deadline = time.monotonic() + NAME_WAIT_SECONDS
        while True:
            self._refuse_if_taken()
            try:
                self.handle = ray.remote(Ingestor).options(
                    name=INGESTOR,
                    namespace=self.namespace,
                    # Owned by this process: it dies with it and is never restarted
                    # elsewhere (a restarted mailbox with no lake behind it would
                    # only queue records nobody stores).
                    max_restarts=0,
                    max_task_retries=0,
                    max_concurrency=1000,
                    num_cpus=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
                ).remote()
                break
            except ValueError:  # the name is still held by a dead predecessor
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)
        ray.get(self.handle.info.remote(), timeout=120)
        self._thread = threading.Thread(target=self._run, name="seclake-ingestor", daemon=True)
        self._thread.start()
        log.info("ingestor up in namespace %s: other API nodes' imports are stored here", self.namespace)

    def _refuse_if_taken(self) -> None:
        """Fail if a live ingestor exists; wait while a dead one (a crashed predecessor) still holds the name."""
        import ray

        deadline = time.monotonic() + NAME_WAIT_SECONDS
        while True:
            try:
                other = ray.get_actor(INGESTOR, namespace=self.namespace)
            except ValueError:
                return
            try:
                info = ray.get(other.info.remote(), timeout=10)
            except Exception:  # noqa: BLE001 - dead, or dying with its crashed owner: Ray frees the name soon
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the Ray actor {INGESTOR!r} in namespace {self.namespace!r} neither answers nor goes away"
                    ) from None
                time.sleep(1.0)
                continue
            raise RuntimeError(
                f"another ingest node already takes this deployment's imports (Ray actor {INGESTOR!r} in "
                f"namespace {self.namespace!r}, pid {info['pid']} on node {str(info['node_id'])[:12]}); "
                "run extra API nodes with --no-ingest, or give this deployment its own ray_namespace"
            )

    def stop(self) -> None:
        import ray

        self._stop.set()
        if self._thread is not None:
            self._thread.join(POLL_SECONDS * 10)
        if self.handle is not None:
            # Gone at once: read-only nodes answer "no ingest node" instead of waiting.
            try:
                ray.kill(self.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone with the cluster
                pass
            self.handle = None

    def _run(self) -> None:
        import ray

        while not self._stop.is_set():
            try:
                batches = ray.get(self.handle.take.remote(POLL_SECONDS), timeout=POLL_SECONDS + 60)
            except Exception as e:  # noqa: BLE001 - the cluster is unwell; keep trying until stopped
                if self._stop.is_set():
                    return
                log.warning("ingestor: cannot take imports (%s); retrying", e)
                self._stop.wait(1.0)
                continue
            for batch_id, items, request in batches:
                outcome = self._store(items, request)
                try:
                    ray.get(self.handle.settle.remote(batch_id, outcome), timeout=60)
                except Exception as e:  # noqa: BLE001 - the caller then gets an error for a stored batch
                    log.error("ingestor: stored batch %d but could not acknowledge it: %s", batch_id, e)

    def _store(self, items: list, request: dict | None = None) -> tuple[str, Any]:
        try:
            records = [tuple(i) for i in items]
            if request is not None:
                return ("ok", tuple(self.ingestion.append_once(records, request)))
            return ("ok", self.ingestion.append_records(records))
        except SeclakeError as e:
            return ("error", e)
        except Exception as e:  # noqa: BLE001 - an unexpected fault: the caller answers EXCEPTION, traced here
            log.exception("ingestor: a forwarded import failed")
            return ("fault", f"the ingest node could not store the import: {type(e).__name__}: {e}"[:500])
