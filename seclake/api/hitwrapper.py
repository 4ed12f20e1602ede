"""The search-hit wrapper of timeline and summary searches (spec 2.9, 2.10).

Both answer in Elasticsearch's shape: every member present, null where
null. ``wrap`` turns a SearchResult into that shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seclake.search.root import SearchResult


def wrap(
    result: SearchResult, *, index: str, facet_names: dict[str, list[str]], id_of,
    source_of: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``id_of(hit)`` gives the ``_id`` of a hit (summaries keep their own id);
    ``source_of`` turns a stored record into its wire ``_source``."""
    hits = []
    for h in result.hits:
        _id = id_of(h)
        sort = h.sort_value
        if isinstance(sort, float) and sort.is_integer():
            sort = int(sort)
        hits.append({
            "_score": None,
            "_index": index,
            "_type": index,
            "_id": _id,
            "_uid": f"{index}#{_id}",
            "_timestamp": None,
            "_ttl": None,
            "_routing": None,
            "_parent": None,
            "_version": None,
            "sort": [sort] if sort is not None else [],
            "highlight": None,
            "_source": h.source if source_of is None else source_of(h.source),
            "fields": None,
            "_explanation": None,
            "matched_queries": None,
            "inner_hits": None,
        })
    aggregations = aggregations_of(result, facet_names)
    return {
        "took": result.took_ms,
        "_scroll_id": "",
        "hits": {"total": result.total, "max_score": None, "hits": hits},
        "suggest": None,
        "aggregations": aggregations,
        "timed_out": False,
        "terminated_early": False,
        "_shards": shards(result),
    }


def say_if_incomplete(ctx: Any, response: dict[str, Any]) -> dict[str, Any]:
    """Add ``incomplete`` (why, as text) while the node is not ready
    (``service/readiness.py``): right after a restart, records acknowledged
    before it are searchable again only once the log is replayed."""
    why = ctx.services.readiness.why_not()
    if why is not None:
        response["incomplete"] = why
    return response


def shards(result: SearchResult) -> dict[str, Any]:
    """``_shards`` of a result: one shard per split searched.

    A split that gave no answer counts as failed and is named under
    ``failures``, so a partial answer is never silent; the member is absent
    when nothing failed.
    """
    out: dict[str, Any] = {"total": result.splits, "successful": result.successful, "failed": len(result.failed)}
    if result.failed:
        out["failures"] = failures(result.failed)
    return out


# Why a split gave no answer: in cluster mode its searchers died or missed the
# deadline (after one retry); in any mode the node could not read its files at
# start (both are in the server log, with the split's id).
FAILED_SPLIT = ("the split gave no answer: its searchers did not answer (cluster mode) or its files cannot be "
                "read (see the server log)")


def failures(split_ids: list[str]) -> list[dict[str, str]]:
    return [{"index": sid, "reason": FAILED_SPLIT} for sid in split_ids]


def aggregations_of(result: SearchResult, facet_names: dict[str, list[str]]) -> dict[str, Any]:
    """Facets in the 2.10 shape, one member per name sent, and date histograms."""
    aggregations: dict[str, Any] = {}
    for path, facet in result.facets.items():
        for name in facet_names.get(path, [path]):
            aggregations[name] = {
                "doc_count_error_upper_bound": 0,
                "sum_other_doc_count": facet.sum_other_doc_count,
                "buckets": [{"key": b.key, "doc_count": b.doc_count} for b in facet.buckets],
            }
    for name, buckets in result.histograms.items():
        aggregations[name] = {"buckets": [{"key": start, "doc_count": n} for start, n in buckets]}
    return aggregations
