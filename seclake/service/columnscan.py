"""The columnar path of an analytics query: the splits' columns read, the pipeline evaluated on them.

``answer`` is tried before the row path (``service/analytics.run``): the
evaluator (``analytics/columnar.py``) says whether it takes the query (a STATS
over WHERE and EVAL it can run on arrays); the head is counted as the row path
counts it (the same splits, the same refusal past ``analytics_max_records``),
and each split's columns (``storage/columns.py``, computed on a split's first
use and kept beside it) are read: every row for a split the head matches whole,
else the rows of the matching docIds, paged through the index as the row path
pages them. So both paths read exactly the same records, in the same order.

None (the row path answers) when the setting ``analytics_columnar`` is off,
the evaluator does not take the query, the head selects more than ``MAX_ROWS``
records or it reads more than ``MAX_PATHS`` paths, a split is not open in this process
(cluster mode's searchers, an API node's catalog entries, a damaged or
format-1 split), or a column holds values the evaluator does not take
(booleans, several values at a path: then ``progress.read`` starts again).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from seclake.analytics import columnar
from seclake.analytics.execution import AnalyticsLimits, Result
from seclake.search.root import InProcessLeaves
from seclake.service import analytics
from seclake.storage import columns
from seclake.storage.split import DamagedSplit, Split, meta_of

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
    counted = [(split, total, task) for _, split, total, task in
               analytics.counted(services, selection, progress, services.settings.analytics_max_records)]
    if progress.total > MAX_ROWS:
        return None
    if any(not isinstance(split, Split) or isinstance(split, DamagedSplit) or split.store is None
           for split, _, _ in counted):
        return None

    def batches():
        for split, total, task in counted:
            progress.check()
            read = columns.read(split, prepared.paths, columnar.READING, progress.check)
            if read.computed:
                services.metrics.analytics_columns.inc(read.computed)
            if total == meta_of(split).num_records:
                index = np.arange(len(read.docids))
            else:
                index = _positions(read.docids, analytics._docid_pages(split, task, progress))
            progress.read += len(index)
            yield columnar.Batch(read.columns, index)

    try:
        return columnar.evaluate(prepared, batches(), limits)
    except columnar.Unsupported as e:
        log.debug("analytics: the row path answers %r (%s)", pipeline.text[:200], e)
        progress.read = 0
        return None


def _positions(docids: np.ndarray, pages) -> np.ndarray:
    """The rows of a split's columns holding the docIds ``pages`` give (ascending), the ones
    its store holds (as the row path skips a docId whose record the store lacks)."""
    wanted = np.concatenate([np.array(page, dtype=np.uint64) for page in pages] or [np.zeros(0, np.uint64)])
    at = np.searchsorted(docids, wanted)
    inside = at < len(docids)
    at, wanted = at[inside], wanted[inside]
    return at[docids[at] == wanted]
