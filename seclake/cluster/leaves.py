"""The root's side of cluster mode: the live searchers and the Ray leaf executor.

``RayLeaves`` is the ``LeafExecutor`` of cluster mode: the root plans and
merges exactly as in embedded mode, and this runs each split's leaf on the
searcher rendezvous hashing gives it, one Ray call per searcher carrying
all of its splits (``fanout.fan_out``: per-request deadline, one retry
elsewhere, failed splits named). Hits are fetched in a second fan-out by
(split id, docId), from the same searchers, so only the winning records
travel. A piped query's STATS is folded on the searchers (``aggregate``,
the same fan-out): only its groups travel.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from seclake.cluster import NAMESPACE, SEARCHER_PREFIX
from seclake.cluster.fanout import fan_out
from seclake.cluster.placement import ActorDirectory, connect
from seclake.errors import SeclakeError
from seclake.search.leaf import LeafHit, LeafResult, LeafTask
from seclake.storage.split import meta_of

log = logging.getLogger("seclake.cluster")

# The fetch phase gets what is left of the request's deadline, but at least this.
MIN_FETCH_SECONDS = 1.0


def unwrapped(inner: Future) -> Future:
    """A future of a searcher's per-split answers as the fan-out takes them:
    split id -> answer, or the exception that split raised there (seclake
    errors as themselves, so the fan-out lets them through)."""
    out: Future = Future()

    def done(f: Future) -> None:
        try:
            answers = f.result()
        except BaseException as e:  # noqa: BLE001 - the searcher's failure, reported to the fan-out
            out.set_exception(e)
            return
        out.set_result({split_id: _answer(status, value) for split_id, (status, value) in answers.items()})

    inner.add_done_callback(done)
    return out


def _answer(status: str, value: Any) -> Any:
    # "ok": the answer; "error": the seclake error it raised (errors pickle as themselves).
    return SplitFailed(value) if status == "failed" else value


class SplitFailed(RuntimeError):
    """A searcher answered the call but could not search this one split."""


class SearcherDirectory(ActorDirectory):
    """The searchers of the cluster (see ``ActorDirectory``)."""

    def __init__(self, namespace: str = NAMESPACE, refresh: float = 2.0):
        super().__init__(SEARCHER_PREFIX, namespace, refresh)


class RayLeaves:
    def __init__(self, directory: SearcherDirectory, *, timeout: float = 30.0, metrics: Any = None):
        self.directory = directory
        self.timeout = timeout
        # service/metrics.Metrics: calls, retried and failed splits are counted there.
        self.metrics = metrics
        self._request = threading.local()

    @classmethod
    def connect(
        cls, address: str, *, namespace: str = NAMESPACE, timeout: float = 30.0, metrics: Any = None
    ) -> "RayLeaves":
        connect(address, namespace)
        return cls(SearcherDirectory(namespace), timeout=timeout, metrics=metrics)

    # -- LeafExecutor ---------------------------------------------------

    def search(self, splits: Sequence[Any], task: LeafTask) -> tuple[dict[str, LeafResult], list[str]]:
        self._request.started = time.monotonic()
        datasets = {meta_of(s).split_id: meta_of(s).dataset for s in splits}
        handles = self.directory.live()

        def call(split_ids: list[str], searcher: str) -> Future:
            return self._submit(handles[searcher], "search", [(datasets[s], s) for s in split_ids], task)

        outcome = self._run("search", list(datasets), handles, call, self.timeout)
        return outcome.results, outcome.failed

    def fetch(self, splits: dict[str, Any], hits: Sequence[LeafHit]) -> tuple[dict[tuple[str, int], dict], list[str]]:
        wanted: dict[str, list[int]] = {}
        for h in hits:
            wanted.setdefault(h.split_id, []).append(h.docid)
        started = getattr(self._request, "started", time.monotonic())
        left = max(MIN_FETCH_SECONDS, started + self.timeout - time.monotonic())
        handles = self.directory.live()

        def call(split_ids: list[str], searcher: str) -> Future:
            triples = [(meta_of(splits[s]).dataset, s, wanted[s]) for s in split_ids]
            return self._submit(handles[searcher], "fetch", triples)

        outcome = self._run("fetch", list(wanted), handles, call, left)
        out: dict[tuple[str, int], dict] = {}
        failed = list(outcome.failed)
        for split_id, records in outcome.results.items():
            missing = [d for d in wanted[split_id] if d not in records]
            if missing:
                # The split answered the search but lacks the record: never
                # drop it silently.
                failed.append(split_id)
            for docid, source in records.items():
                out[(split_id, docid)] = source
        return out, sorted(set(failed))

    def aggregate(self, splits: Sequence[Any], task: Any, timeout: float | None) -> tuple[dict[str, Any], list[str]]:
        """Each split's STATS groups (``service.analytics.AggregateTask``), folded by its searcher, and
        the ids of the splits no searcher answered; within ``timeout`` (the query's time left;
        the executor's own when None)."""
        datasets = {meta_of(s).split_id: meta_of(s).dataset for s in splits}
        handles = self.directory.live()

        def call(split_ids: list[str], searcher: str) -> Future:
            return self._submit(handles[searcher], "aggregate", [(datasets[s], s) for s in split_ids], task)

        outcome = self._run("aggregate", list(datasets), handles, call, self.timeout if timeout is None else timeout)
        return outcome.results, outcome.failed

    # -- internals --------------------------------------------------------

    def _run(self, phase: str, items: list[str], handles: dict[str, Any], call, timeout: float):
        started = time.monotonic()
        outcome = fan_out(
            items,
            sorted(handles),
            call,
            timeout=timeout,
            cancel=self._cancel,
            is_fatal=lambda e: isinstance(e, SeclakeError),
        )
        retried = sorted(item for item, tried in outcome.tried.items() if len(tried) > 1)
        if self.metrics is not None:
            self.metrics.cluster(phase, outcome.calls, len(retried), len(outcome.failed))
        if retried:
            # Every retry is visible: it costs the request time (a dead or late searcher).
            log.warning("cluster %s: %d of %d splits asked again of another searcher after a failure or the "
                        "first deadline (%.0f ms in all): %s", phase, len(retried), len(items),
                        (time.monotonic() - started) * 1000, retried[:10])
        if outcome.failed:
            log.warning("cluster %s: %d of %d splits failed: %s", phase, len(outcome.failed), len(items),
                        "; ".join(f"{s} ({outcome.reasons.get(s, 'no reason given')})" for s in outcome.failed[:10]))
            # A searcher may be gone for good: list them again next time.
            self.directory.forget()
        elif any(len(t) > 1 for t in outcome.tried.values()):
            self.directory.forget()
        return outcome

    def _submit(self, handle: Any, method: str, *args: Any) -> Future:
        """Call ``method`` of a searcher actor; the one place that speaks Ray."""
        ref = getattr(handle, method).remote(*args)
        out = unwrapped(ref.future())
        out.ref = ref  # type: ignore[attr-defined]
        return out

    @staticmethod
    def _cancel(fut: Future) -> None:
        ref = getattr(fut, "ref", None)
        if ref is None:  # not a Ray call (the tests' thread leaves): nothing to cancel, no Ray to import
            return
        import ray

        try:
            ray.cancel(ref)
        except Exception:  # noqa: BLE001 - best effort: the answer is ignored anyway
            pass
