"""The columnar path of an analytics query: the splits' columns read, the pipeline evaluated on them.

``answer`` is tried before the row path (``service/analytics.run``): the
evaluator (``analytics/columnar.py``) says whether it takes the query (a STATS
over WHERE and EVAL it can run on arrays); the head selects the records of the
same splits as the row path (the same query per split, the same refusal past
``analytics_max_records``): a head that is only the time range is counted per
split, any other has its docIds gathered by one search per split (``_chosen``);
a head that is only the existence of paths the query reads (``f:*``,
``_exists_:f``, AND-ed) is the time range's records whose columns of those paths
hold a value (``_existing``), where the splits' shapes show that is the
same (no record holds an object under such a path).
Each split's columns (``storage/columns.py``, computed on a split's first use
and kept beside it) are read: every row for a split the head matches whole,
else the rows of the matching docIds. So both paths read exactly the same
records, in the same order.

None (the row path answers) when the setting ``analytics_columnar`` is off,
the evaluator does not take the query, the head selects more than ``MAX_ROWS``
records or it reads more than ``MAX_PATHS`` paths, a split is not open in this process
(cluster mode's searchers, an API node's catalog entries, a damaged or
format-1 split), or a column holds values the evaluator does not take
(booleans, several values at a path: then ``progress.read`` starts again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np
import tantivy

from seclake.analytics import columnar
from seclake.analytics.execution import AnalyticsLimits, Result
from seclake.errors import LimitExceeded
from seclake.query import ast
from seclake.search.leaf import LeafTask, _compiled
from seclake.search.root import InProcessLeaves
from seclake.service import analytics
from seclake.storage import columns
from seclake.storage.split import Split, meta_of

if TYPE_CHECKING:
    from seclake.services import Services

log = logging.getLogger(__name__)

# Records one query reads by columns at most: the evaluator holds the values it reads of every
# record selected until the STATS folds them (up to ~22 bytes a value and path read, then as
# much again for the groups' ids: ~150 MB for a million records and three paths). A query
# selecting more takes the row path, whose memory is its groups and held values (the language's
# limits), whatever the records.
MAX_ROWS = 1_000_000
# Paths one query reads by columns at most (each a column of every split it reads, computed and
# kept on first use): a query naming more takes the row path.
MAX_PATHS = 32


def answer(services: Services, pipeline: Any, selection: analytics.Selection, progress: analytics.Progress,
           now_ms: int) -> Result | None:
    """The pipeline's answer over the columns of the splits, or None (module doc); the path
    counted in /metrics (``seclake_analytics_paths_total``)."""
    result = _answer(services, pipeline, selection, progress, now_ms)
    services.metrics.analytics_paths.labels("rows" if result is None else "columnar").inc()
    return result


def _answer(services: Services, pipeline: Any, selection: analytics.Selection, progress: analytics.Progress,
            now_ms: int) -> Result | None:
    if not services.settings.analytics_columnar or selection.dataset.name == "summary" or \
            not isinstance(services.search.leaves, InProcessLeaves):
        return None
    limits = AnalyticsLimits()  # as execute()'s
    prepared = columnar.prepare(pipeline.commands, pipeline.dataset, now_ms, limits)
    if prepared is None or len(prepared.paths) > MAX_PATHS:
        return None
    chosen, existing = _existing(services, selection, progress, prepared.paths)
    if chosen is None:
        chosen = _chosen(services, selection, progress)
    if chosen is None:
        return None

    def batches():
        for split, matching in chosen:
            progress.check()
            read = columns.read(split, prepared.paths, columnar.READING, progress.check)
            if read.computed:
                services.metrics.analytics_columns.inc(read.computed)
            index = np.arange(len(read.docids)) if matching is None else _positions(read.docids, matching())
            for path in existing:
                column = read.columns[path]
                if column.other:
                    raise columnar.Unsupported(f"the column {path}")
                index = index[column.kinds[index] != columns.MISSING]
            progress.read += len(index)
            yield columnar.Batch(read.columns, index)

    try:
        answered = columnar.evaluate(prepared, batches(), limits)
    except columnar.Unsupported as e:
        log.debug("analytics: the row path answers %r (%s)", pipeline.text[:200], e)
        progress.read = 0
        return None
    if existing:
        progress.total = progress.read  # the range's records counted, those the head matches read
    return answered


def _existing(services: Services, selection: analytics.Selection, progress: analytics.Progress,
              paths: tuple[str, ...]) -> tuple[list | None, tuple[str, ...]]:
    """For a head that is only the existence of paths the query reads by columns (``f:*``,
    ``_exists_:f``, AND-ed; no data policy), the time range's records per split (``_chosen``
    of the range alone) and those paths, whose columns then select the rows holding a value:
    no search, no docIds of the head (the bench's ``@fields.sentbyte:*`` head over 110,897
    of 378,202 records: ~30 ms of tantivy's search and its hits made docIds at 2M events).
    The same records as the head's search where every split's shapes say no record holds
    an object under those paths (``Shapes.only_leaves_at``); else, or when the range's
    records are too many to read this way, ``(None, ())``: the head is searched."""
    node = selection.plan.query
    parts = node.children if isinstance(node, ast.And) else (node,)
    if not all(isinstance(part, ast.Exists) and part.path in paths for part in parts):
        return None, ()
    wanted = tuple(dict.fromkeys(part.path for part in parts))  # type: ignore[attr-defined]
    ranged = analytics.Selection(selection.dataset, replace(selection.plan, query=ast.MatchAll()))
    try:
        chosen = _chosen(services, ranged, progress)
    except LimitExceeded:
        chosen = None  # the range holds more than analytics_max_records: the head may not
    selection.failed = ranged.failed
    if chosen is None or not all(
            meta_of(split).shapes is not None and all(meta_of(split).shapes.only_leaves_at(p) for p in wanted)
            for split, _ in chosen):
        progress.total = None
        return None, ()
    progress.total = None  # the range's count is not the head's: known once the columns are read
    return chosen, wanted


def _chosen(services: Services, selection: analytics.Selection,
            progress: analytics.Progress) -> list[tuple[Split, Callable[[], np.ndarray] | None]] | None:
    """The splits the head matches and, per split, a function giving its matching docIds
    (ascending), or None where it matches every record; None when the columnar path cannot
    read them (a split not open here) or the head selects more than ``MAX_ROWS``.

    A head that is only the time range (no search, no data policy) is counted per split as
    the row path counts it (cheap: a split inside the range matches whole, read without
    docIds), and a split it matches in part is paged. Any other head's docIds are gathered
    with one search per split, its count and its hits at once, when the splits listed hold
    ``MAX_ROWS`` records at most (so what is gathered is bounded without counting first): a
    head such as ``@fields.sentbyte:*`` cost tantivy as much to count as to list (0.8 ms a
    split of 6,000 records), and counting first searched it twice."""
    max_records = services.settings.analytics_max_records
    if isinstance(selection.plan.query, ast.MatchAll):
        return _counted(services, selection, progress, max_records)
    splits, task = analytics.listed(services, selection)
    if any(not _readable(split) for split in splits) or \
            sum(meta_of(split).num_records for split in splits) > MAX_ROWS:
        return _counted(services, selection, progress, max_records)
    found = []
    for split in splits:
        progress.check()
        docids = _matching(split, task)
        if len(docids):
            found.append((split, docids))
    selection.failed = []
    progress.total = sum(len(docids) for _, docids in found)
    analytics.refuse(progress.total, max_records)  # as counted() refuses, before any column is read
    return [(split, None if len(docids) == meta_of(split).num_records else (lambda d=docids: d))
            for split, docids in found]


def _counted(services: Services, selection: analytics.Selection, progress: analytics.Progress,
             max_records: int) -> list[tuple[Split, Callable[[], np.ndarray] | None]] | None:
    counted = [(split, total, task) for _, split, total, task in
               analytics.counted(services, selection, progress, max_records)]
    if progress.total > MAX_ROWS or any(not _readable(split) for split, _, _ in counted):
        return None
    return [(split, None if total == meta_of(split).num_records else
             (lambda split=split, task=task: _paged(split, task, progress)))
            for split, total, task in counted]


def _readable(split: Any) -> bool:
    return analytics.open_here(split) and split.store is not None


def _matching(split: Split, task: LeafTask) -> np.ndarray:
    """Every docId of ``split`` the task's query matches, ascending, by one search (the
    docId fast field orders the hits and is their key: no stored document is read)."""
    limit = max(split.searcher.num_docs, 1)
    res = split.searcher.search(_compiled(split, task), limit, count=True, order_by_field="docid",
                                order=tantivy.Order.Asc)
    hits = res.hits
    if res.count > len(hits):  # more matches than documents: not a split as written here
        raise RuntimeError(f"split {meta_of(split).split_id}: {res.count} matches of {limit} documents")
    return np.fromiter(map(itemgetter(0), hits), dtype=np.uint64, count=len(hits))


def _paged(split: Split, task: LeafTask, progress: analytics.Progress) -> np.ndarray:
    pages = [np.array(page, dtype=np.uint64) for page in analytics.docid_pages(split, task, progress)]
    return np.concatenate(pages) if pages else np.zeros(0, np.uint64)


def _positions(docids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The rows of a split's columns holding the docIds ``wanted`` (ascending), the ones
    its store holds (as the row path skips a docId whose record the store lacks)."""
    at = np.searchsorted(docids, wanted)
    inside = at < len(docids)
    at, wanted = at[inside], wanted[inside]
    return at[docids[at] == wanted]
