"""Analytics queries (docs/analytics.md): every record a query's head selects,
read exactly and within the caller's data policies, then its pipeline.

A piped query is a Lucene head (exactly a search's ``searchStr``) and
commands (``seclake.analytics``). The head is planned as a search is
(``api/options.build_plan``, by the call: the same parser, limits, range checks and data
policy AND-ed in), so a restricted analyst aggregates only what they may
see. Then, unlike a search, *every* matching record is read: no page, no
10,000 window, no sampling, so COUNT and COUNT_DISTINCT are exact.

Reading goes through the search root's own parts: its split listing and
customer pruning, and its leaf executor (``LeafExecutor``), so the same code
reads embedded splits, an API node's catalog entries and cluster mode's
searchers. Open splits of this process take a faster path: the compiled
query is paged by docId (a fast field) a page at a time, and the records
come from the split's record store; nothing but a page is held. Elsewhere
one split's matching docIds are held at a time and the records fetched a
page at a time. Behavior summaries live in the database and are read by the
summary store's exact search.

In cluster mode a pipeline with a STATS after row-wise commands only
(``analytics/partial.py``) is not read record by record: each searcher
folds the records of its splits into the STATS's groups
(``aggregate_split``) and only those travel; this node merges them in the
order the splits are read here and runs the rest of the pipeline. A split
no searcher answered fails the query (an aggregate leaving records out
would look whole).

Bounds: the matching records are counted first (each split counts its
own, exactly), and a query that would read more than
``analytics_max_records`` is refused before anything is read, saying how
many and how to narrow it; the reader stops at its deadline or when
cancelled (a task), between pages. Records are handed on one at a time as
flat dicts of the record paths the pipeline reads, never all kept here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import tantivy
from tantivy import FieldType, Occur, Query

from seclake.analytics.execution import AnalyticsLimits
from seclake.analytics.partial import Aggregation, divisible
from seclake.analytics.projection import decoder
from seclake.errors import LimitExceeded, SearchTimeout, SeclakeError, Unavailable
from seclake.query import ast
from seclake.record.dataset import DATASETS, Dataset
from seclake.record.flatten import leaves, values_at
from seclake.search.leaf import LeafTask, _compiled
from seclake.search.plan import SearchPlan
from seclake.search.pruning import prune
from seclake.search.root import InProcessLeaves
from seclake.storage.split import DamagedSplit, Split, meta_of

if TYPE_CHECKING:
    from seclake.services import Services

log = logging.getLogger(__name__)

# The datasets a query reads (``dataType``), as the searches name them.
DATA_TYPES = ("event", "flow", "behavior", "summary")

# Records read between two looks at the deadline and the cancel flag, and
# held at most at a time on the fast path: ~10 ms of decoding.
PAGE = 4096
# A path no record holds: leaves then order their hits by docId alone.
_BY_DOCID = "\x00docid"


class Cancelled(SeclakeError):
    """A task's query stopped because it was cancelled."""

    code = "conflict"


@dataclass
class Progress:
    """How far a query is, and how to stop it; shared with the task that polls it."""

    total: int | None = None  # matching records, once counted
    read: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None  # time.monotonic() past which reading stops
    timeout: float | None = None  # the seconds the deadline stands for (said in the error)

    def check(self) -> None:
        if self.stop.is_set():
            raise Cancelled("the query was cancelled")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise SearchTimeout(
                f"the query was stopped after {self.timeout:g} s, having read {self.read} of "
                f"{self.total if self.total is not None else '?'} records; narrow the search before the first "
                f"pipe or the time range, or submit it as a task (ds/query_async)"
            )


@dataclass
class Selection:
    """What a query reads: the plan of its head, made as a search's (``api/options.build_plan``,
    the caller's data policy AND-ed in), and the splits that gave no answer once read."""

    dataset: Dataset
    plan: SearchPlan
    failed: list[str] = field(default_factory=list)  # splits that gave no answer (partial result)


def records(services: Services, selection: Selection, fields: Sequence[str] | None, progress: Progress,
            *, max_records: int) -> Iterator[dict[str, Any]]:
    """Every record ``selection`` matches, as a flat dict ``{record path: value}`` (only the
    paths in ``fields`` when given: the pipeline's, resolved as a search resolves names);
    refused before reading when more than ``max_records`` match."""
    if selection.dataset.name == "summary":
        source = _summaries(services, selection, progress, max_records)
    else:
        # Of a stored record only what lies on the way to the paths read is decoded (projection.py).
        source = _lake(services, selection, progress, max_records, decoder(fields))
    yield from _projected(source, fields)


def _projected(source: Iterator[dict], fields: Sequence[str] | None) -> Iterator[dict[str, Any]]:
    if fields is None:
        for record in source:
            yield flat(record)
        return
    # A few paths looked up (values_at, compiled) cost less than walking every leaf.
    paths = sorted(fields)
    for record in source:
        out = {}
        for path in paths:
            found = values_at(record, path)
            if found:
                out[path] = found[0] if len(found) == 1 else found
        yield out


def flat(record: dict[str, Any]) -> dict[str, Any]:
    """A whole record as ``{dotted.path: value}``; a path holding several values (an array)
    keeps them as a list, in document order."""
    out: dict[str, Any] = {}
    for path, value in leaves(record):
        if path in out:
            held = out[path]
            if isinstance(held, list):
                held.append(value)
            else:
                out[path] = [held, value]
        else:
            out[path] = value
    return out


def refuse(total: int, max_records: int) -> None:
    """The refusal of a query whose head selects ``total`` records, past ``max_records``
    (the row path and the columnar path, service/columnscan.py, refuse alike)."""
    if total > max_records:
        raise LimitExceeded("records the query reads (setting analytics_max_records; narrow the search before "
                            "the first pipe or the time range)", total, max_records)


def _summaries(services: Services, selection: Selection, progress: Progress, max_records: int) -> Iterator[dict]:
    store = services.summaries
    # The store's search is exact (every row in range looked at); asking for
    # one hit past the bound tells whether the bound is passed.
    plan = replace(selection.plan, offset=0, limit=max_records + 1, sort_path="from", descending=True,
                   timeout=progress.timeout)
    progress.check()
    result = store.search(plan)
    progress.total = result.total
    refuse(result.total, max_records)
    for i, hit in enumerate(result.hits):
        if i % PAGE == 0:
            progress.check()
        progress.read += 1
        yield hit.source


def _bounded(plan: SearchPlan, dataset: Dataset) -> ast.Node:
    """The plan's query with its time range, as the search root builds it."""
    if plan.range_from is None and plan.range_to is None:
        return plan.query
    bound = ast.Range(path=plan.range_path or dataset.time_field, lo=plan.range_from, hi=plan.range_to,
                      include_lo=True, include_hi=True, kind="number")
    return ast.And(children=(bound, plan.query))


def _listed(root: Any, plan: SearchPlan, dataset: Dataset, node: ast.Node) -> list:
    """The splits the bounded query may match: by the time range, then customer pruning."""
    if (plan.range_path or dataset.time_field) == dataset.time_field:
        listed = root.splits_for(plan.dataset, plan.range_from, plan.range_to)
    else:
        listed = root.splits_for(plan.dataset, None, None)
    return prune(listed, node, dataset)


def listed(services: Services, selection: Selection) -> tuple[list, LeafTask]:
    """The splits the selection may match (the time range, customer pruning), in the order they
    are read, and the task that counts and pages their matches (k=0: counting). One list of
    splits for counting and reading: a merge publishing meanwhile does not make a record
    counted twice or missed."""
    plan, dataset = selection.plan, selection.dataset
    node = _bounded(plan, dataset)
    splits = _listed(services.search, plan, dataset, node)
    return splits, LeafTask(dataset=plan.dataset, query=node, sort_path=_BY_DOCID, descending=False, k=0)


def counted(services: Services, selection: Selection, progress: Progress,
            max_records: int) -> list[tuple[str, Any, int, LeafTask]]:
    """The splits whose records the selection matches: (split id, split, matches, the task that
    pages them), in the order they are read; refused past ``max_records`` in all. The columnar
    path (service/columnscan.py) reads the same."""
    splits, count = listed(services, selection)
    by_id = {meta_of(s).split_id: s for s in splits}
    progress.check()
    totals, failed = _matches(services, selection, splits, count)
    selection.failed = sorted(failed)
    progress.total = sum(totals.values())
    refuse(progress.total, max_records)
    return [(sid, by_id[sid], total, replace(count, k=total)) for sid, total in totals.items() if total]


def _matches(services: Services, selection: Selection, splits: list, count: LeafTask) -> tuple[dict[str, int], list]:
    """Each split's matches (split id -> records, in the splits' order) and the splits that gave
    no answer. A head that is only the time range matches a split the range holds whole in every
    record (each has its time, ``ts``, within the split's bounds): counted without a search where
    this process reads the splits; a searcher counts its own (which also finds them readable)."""
    here = isinstance(services.search.leaves, InProcessLeaves)
    whole = {meta_of(s).split_id for s in splits if here and _inside(selection, meta_of(s))}
    answered, failed = services.search.leaves.search([s for s in splits if meta_of(s).split_id not in whole], count)
    totals = {}
    for split in splits:
        sid = meta_of(split).split_id
        if sid in whole:
            totals[sid] = meta_of(split).num_records
        elif sid in answered:
            totals[sid] = answered[sid].total
    return totals, failed


def _inside(selection: Selection, meta: Any) -> bool:
    """Whether every record of the split ``meta`` describes lies in the selection's time range
    and the selection has no other condition."""
    plan = selection.plan
    return isinstance(plan.query, ast.MatchAll) and plan.range_path in (None, selection.dataset.time_field) and \
        (plan.range_from is None or plan.range_from <= meta.time_min) and \
        (plan.range_to is None or meta.time_max <= plan.range_to)


def open_here(split: Any) -> bool:
    """A split this process holds open and readable (not a catalog entry, a searcher's, or damaged)."""
    return isinstance(split, Split) and not isinstance(split, DamagedSplit)


def _lake(services: Services, selection: Selection, progress: Progress, max_records: int,
          decode: Callable[[bytes], dict]) -> Iterator[dict]:
    leaves_ = services.search.leaves
    for sid, split, total, task in counted(services, selection, progress, max_records):
        if open_here(split) and isinstance(leaves_, InProcessLeaves):
            if total == meta_of(split).num_records and split.store is not None:
                yield from _scanned(split, progress, decode)
            else:
                yield from _paged(split, task, progress, decode)
        else:
            yield from _fetched(leaves_, sid, split, task, progress, selection)


def _scanned(split: Split, progress: Progress, decode: Callable[[bytes], dict]) -> Iterator[dict]:
    """An open split the query matches whole (its count is the split's records: a day inside
    the range, no head): its store read block by block, in docId order as ``_paged`` gives
    them, without paging docIds through the index and looking each record up: 1.4-1.7x less
    CPU per record for a query without a head, side by side over 37,613 records (docs/analytics.md)."""
    assert split.store is not None
    for i, (_docid, body) in enumerate(split.store):
        if i % PAGE == 0:
            progress.check()
        progress.read += 1
        yield decode(body)


def _paged(split: Split, task: LeafTask, progress: Progress, decode: Callable[[bytes], dict]) -> Iterator[dict]:
    """An open split's matching records, a page of docIds at a time (the compiled query
    AND docId past the last page), records from the split's store."""
    for docids in docid_pages(split, task, progress):
        bodies = split.bodies_of(docids)
        for d in docids:
            body = bodies.get(d)
            if body is not None:
                progress.read += 1
                yield decode(body)


def docid_pages(split: Split, task: LeafTask, progress: Progress) -> Iterator[list[int]]:
    """An open split's matching docIds, ascending, a page at a time (the compiled query AND
    docId past the last page); the columnar path (service/columnscan.py) reads them too."""
    query = _compiled(split, task)
    searcher, schema = split.searcher, split.schema
    after = 0
    while True:
        progress.check()
        page = Query.boolean_query([
            (Occur.Must, query),
            (Occur.Must, Query.range_query(schema, "docid", FieldType.Unsigned, after, 2**63 - 1)),
        ])
        res = searcher.search(page, PAGE, order_by_field="docid", order=tantivy.Order.Asc)
        docids = [int(d) for d, _ in res.hits]
        if not docids:
            return
        yield docids
        if len(docids) < PAGE:
            return
        after = docids[-1] + 1


# At most this many matching docIds of a split read through the executor are held at
# once (a LeafHit each, ~200 bytes): a split holding more is read a time window at a time.
HELD = 65_536


def _fetched(leaves_: Any, sid: str, split: Any, task: LeafTask, progress: Progress,
             selection: Selection) -> Iterator[dict]:
    """A split elsewhere (catalog entry, cluster searcher): its matching docIds, a time
    window at a time, then their records a page at a time through the executor's fetch."""
    for window in _windows(leaves_, sid, split, task, selection):
        answered, failed = leaves_.search([split], window)
        if sid not in answered:
            selection.failed = sorted(set(selection.failed) | set(failed) | {sid})
            return
        hits = answered[sid].hits
        for at in range(0, len(hits), PAGE):
            progress.check()
            chunk = hits[at:at + PAGE]
            sources, missed = leaves_.fetch({sid: split}, chunk)
            if missed:
                selection.failed = sorted(set(selection.failed) | set(missed))
            for h in chunk:
                source = sources.get((h.split_id, h.docid))
                if source is not None:
                    progress.read += 1
                    yield source


def _windows(leaves_: Any, sid: str, split: Any, task: LeafTask, selection: Selection) -> Iterator[LeafTask]:
    """``task`` cut by time (the split's time bounds halved, each half counted) into tasks of at
    most ``HELD`` matches each; a millisecond holding more is one task. Exact or whole: when the
    windows' counts do not add up to the split's (a record whose time the range does not
    see), the split is read in one task."""
    if task.k <= HELD:
        yield task
        return
    meta = meta_of(split)
    path = DATASETS[task.dataset].time_field
    done: list[LeafTask] = []
    todo = [(meta.time_min, meta.time_max, task.k)]
    while todo:
        lo, hi, n = todo.pop()
        if n <= HELD or lo >= hi:
            bound = ast.Range(path=path, lo=lo, hi=hi, include_lo=True, include_hi=True, kind="number")
            done.append(replace(task, query=ast.And(children=(bound, task.query)), k=n))
            continue
        mid = (lo + hi) // 2
        halves = []
        for a, b in ((lo, mid), (mid + 1, hi)):
            bound = ast.Range(path=path, lo=a, hi=b, include_lo=True, include_hi=True, kind="number")
            answered, _ = leaves_.search([split], replace(task, query=ast.And(children=(bound, task.query)), k=0))
            if sid not in answered:
                yield task
                return
            halves.append((a, b, answered[sid].total))
        todo.extend((a, b, c) for a, b, c in reversed(halves) if c)
    if sum(t.k for t in done) != task.k:
        log.warning("split %s: its time windows count %d records of %d; read whole", sid,
                    sum(t.k for t in done), task.k)
        yield task
        return
    yield from done


# -- cluster mode: STATS folded on the searchers ------------------------------------------------

# Splits asked of the searchers at once: the API node holds at most this many splits' groups
# before merging them (each within the query's limits).
AGGREGATE_BATCH = 16


@dataclass(frozen=True)
class AggregateTask:
    """What a searcher needs to fold its splits' records into a query's STATS groups (plain data:
    Ray pickles it): the bounded head as the search root builds it (data policy AND-ed in), the
    pipeline's commands and record paths, the query's now and limits, each split's matching
    records as counted here, and the seconds the query has left."""

    dataset: str
    query: ast.Node
    commands: tuple
    fields: frozenset[str] | None
    now: int
    limits: AnalyticsLimits
    totals: dict[str, int]
    seconds: float | None


def aggregate_split(split: Split, task: AggregateTask) -> dict[str, Any]:
    """On a searcher: one open split's matching records through the pipeline's prefix and its
    STATS's fold; the groups' states (``partial.Part``) and the records read."""
    total = task.totals[meta_of(split).split_id]
    progress = Progress(deadline=None if task.seconds is None else time.monotonic() + task.seconds,
                        timeout=task.seconds)
    decode = decoder(task.fields)
    if total == meta_of(split).num_records and split.store is not None:
        source = _scanned(split, progress, decode)
    else:
        count = LeafTask(dataset=task.dataset, query=task.query, sort_path=_BY_DOCID, descending=False, k=total)
        source = _paged(split, count, progress, decode)
    aggregation = Aggregation(task.commands, DATASETS[task.dataset], task.now, task.limits)
    groups = aggregation.part(_projected(source, task.fields))
    return {"groups": groups, "read": progress.read}


def _folds_on_searchers(services: Services, pipeline: Any, selection: Selection) -> bool:
    return (selection.dataset.name != "summary" and hasattr(services.search.leaves, "aggregate")
            and divisible(pipeline.commands))


def _aggregated(services: Services, pipeline: Any, selection: Selection, progress: Progress, now_ms: int,
                max_records: int) -> Any:
    """The pipeline's answer from the searchers' STATS groups, merged split by split in the
    order ``_lake`` reads them (so equal to one pass here)."""
    root = services.search
    plan, dataset = selection.plan, selection.dataset
    splits, count = listed(services, selection)
    node = count.query
    by_id = {meta_of(s).split_id: s for s in splits}
    progress.check()
    totals, failed = _matches(services, selection, splits, count)
    _whole(failed, "counted")
    progress.total = sum(totals.values())
    refuse(progress.total, max_records)
    limits = AnalyticsLimits()  # as execute()'s: the same bounds as one pass here
    aggregation = Aggregation(pipeline.commands, dataset, now_ms, limits)
    for batch in _batches([(sid, total) for sid, total in totals.items() if total],
                          limits.max_held_values // max(1, aggregation.holding)):
        progress.check()
        left = None if progress.deadline is None else max(1.0, progress.deadline - time.monotonic())
        task = AggregateTask(plan.dataset, node, tuple(pipeline.commands), pipeline.fields, now_ms,
                             limits, {sid: totals[sid] for sid in batch}, left)
        parts, failed = root.leaves.aggregate([by_id[sid] for sid in batch], task, left)
        _whole(failed, "aggregated")
        for sid in batch:
            aggregation.merge(parts[sid]["groups"])
            progress.read += parts[sid]["read"]
    return aggregation.result()


def _batches(totals: list[tuple[str, int]], records: int) -> Iterator[list[str]]:
    """The splits in their order, at most ``AGGREGATE_BATCH`` at a time and, past the first, at
    most ``records`` matching records: the parts of a batch arrive together, before any is
    merged (and refused past ``max_held_values``), so a batch's records bound what its values
    may hold (each record gives a value-holding aggregation one value, but a multi-valued field)."""
    batch: list[str] = []
    held = 0
    for sid, total in totals:
        if batch and (len(batch) == AGGREGATE_BATCH or held + total > records):
            yield batch
            batch, held = [], 0
        batch.append(sid)
        held += total
    if batch:
        yield batch


def _whole(failed: list[str], phase: str) -> None:
    if failed:
        raise Unavailable(f"{len(failed)} split(s) could not be {phase} by any searcher ({', '.join(sorted(failed)[:5])}"
                          f"{', ...' if len(failed) > 5 else ''}); the aggregate would leave their records out. "
                          "Try again once the searchers are back (seclake cluster status)")


def run(services: Services, pipeline: Any, selection: Selection, progress: Progress, *, now_ms: int,
        mode: str = "call") -> tuple[Any, int]:
    """The pipeline over every record ``selection`` matches: its result, and the milliseconds it
    took. Counted in /metrics by ``mode`` (call, task) and outcome, with the records read."""
    from seclake.analytics import execute
    from seclake.service import columnscan  # it reads this module's helpers

    started = time.perf_counter()
    outcome = "failed"
    try:
        max_records = services.settings.analytics_max_records
        # The columnar path first (service/columnscan.py): None when it does not take the query.
        columnar = columnscan.answer(services, pipeline, selection, progress, now_ms)
        if columnar is not None:
            outcome = "done"
            return columnar, _took(started)
        if _folds_on_searchers(services, pipeline, selection):
            result = _aggregated(services, pipeline, selection, progress, now_ms, max_records)
        else:
            rows = records(services, selection, pipeline.fields, progress, max_records=max_records)
            result = execute(pipeline, rows, now=now_ms)
        outcome = "done"
    except Cancelled:
        outcome = "cancelled"
        raise
    except SearchTimeout:
        outcome = "timeout"
        raise
    except LimitExceeded:
        outcome = "refused"
        raise
    finally:
        metrics = services.metrics
        metrics.analytics_queries.labels(mode, outcome).inc()
        metrics.analytics_records.inc(progress.read)
    return result, _took(started)


def _took(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
