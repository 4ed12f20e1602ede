"""Search one split: exact count, top hits by (sort value, id), facets, histograms.

Hits are ordered by (sort value, docId) in the requested direction; records
lacking the sort value come last. tantivy orders by one field only, so when
the k-th hit shares its sort value with records that did not make the cut,
those ties are fetched again ordered by docId: pages never repeat or skip.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import tantivy
from cachetools import LRUCache
from tantivy import FieldType, Occur, Query

from seclake.errors import QueryError
from seclake.query import ast
from seclake.query.matcher import compile_matcher
from seclake.query.tantivy_compiler import compile_for_split, needs_records
from seclake.record.dataset import DATASETS
from seclake.storage.fieldmap import SEP
from seclake.storage.split import Split

MISSING = 1  # first element of a sort key: present values sort before missing ones


@dataclass
class LeafHit:
    key: tuple  # (missing, value, docid) already oriented so that smaller is better
    sort_value: int | float | None
    docid: int
    # Where the record sits in the open split: valid only in the process that
    # searched it. ``portable`` drops it before a result crosses processes;
    # the record is then fetched again by docId.
    address: tantivy.DocAddress | None = None
    split_id: str = ""


@dataclass
class FacetCounts:
    """Records per keyword, and the spellings that differ from the keyword.

    Most values are spelled as their keyword (addresses, lowercase words),
    so only the other spellings are counted apart: merging thousands of
    buckets then adds integers instead of copying a dict per bucket.
    """

    counts: dict[str, int] = field(default_factory=dict)
    # keyword -> {spelling: records}, for spellings other than the keyword itself
    odd: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, norm: str, spelling: str, records: int) -> None:
        self.counts[norm] = self.counts.get(norm, 0) + records
        if spelling != norm:
            self.spelt(norm, spelling, records)

    def spelt(self, norm: str, spelling: str, records: int) -> None:
        """Of the records counted under ``norm``, ``records`` spell it ``spelling``."""
        spellings = self.odd.get(norm)
        if spellings is None:
            spellings = self.odd[norm] = {}
        spellings[spelling] = spellings.get(spelling, 0) + records


# At most this many record paths per split in a field catalog (the most
# common first): a split of hostile records with endless distinct keys must
# not make one catalog request walk and ship all of them.
CATALOG_PATHS = 5000


@dataclass
class LeafResult:
    total: int
    hits: list[LeafHit]
    facets: dict[str, FacetCounts]
    histograms: dict[str, list[int]]
    # Field catalog (``LeafTask.catalog``): record path -> matching records
    # holding it (parents of nested paths included), and the typed kind
    # (number, ip, text) of the paths the split indexes as such.
    paths: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)

    def portable(self) -> "LeafResult":
        """The same result as plain data (no tantivy objects), to send to another process."""
        hits = [LeafHit(h.key, h.sort_value, h.docid, None, h.split_id) for h in self.hits]
        facets = {p: FacetCounts(dict(f.counts), {k: dict(v) for k, v in f.odd.items()}) for p, f in self.facets.items()}
        return LeafResult(self.total, hits, facets, dict(self.histograms), dict(self.paths), dict(self.kinds))


@dataclass(frozen=True)
class LeafTask:
    """What every leaf of one search does: plain data, the same in both modes.

    The query is compiled per split (each split has its own field map), so
    the tree travels, not a compiled tantivy query.
    """

    dataset: str
    query: ast.Node
    sort_path: str
    descending: bool
    k: int
    facets: tuple[str, ...] = ()
    # (name, bucket starts, end) of each date histogram
    histograms: tuple[tuple[str, tuple[int, ...], int], ...] = ()
    # Also count the records holding each path (the field catalog).
    catalog: bool = False


# Compiled queries hold tantivy's automata: bounded by their bytes as the
# compiler counts them (``query.cost`` per automaton, one per pattern and
# field searched: it errs high), not their number, so a few pattern-heavy
# queries cannot pile up gigabytes across splits. Charged per pattern only,
# 256 MB let distinct wildcard queries keep ~200-325 MB (issue 39.6); 64 MB
# keeps at most that much (measured: +13-18 MB, scripts/measure-query-memory.py),
# and holds a paged pattern query's splits (a few hundred KB each): only
# repeats gain from the cache, and a miss costs most of a millisecond per
# split and pattern.
COMPILED_CACHE_BYTES = 64 << 20
_COMPILED: LRUCache = LRUCache(maxsize=COMPILED_CACHE_BYTES, getsizeof=lambda entry: entry[1])
_COMPILED_LOCK = threading.Lock()


def _compiled(split: Split, task: LeafTask) -> Query:
    """The task's query compiled for this split, kept for the next request.

    Paging sends the same query again with another offset, and dashboards
    repeat theirs; a wildcard or regex costs most of a millisecond per split
    to compile (its automaton), as much as searching a small split. Splits
    never change, so (split id, query tree) names the compiled query.
    """
    key = (split.meta.split_id, task.query)
    with _COMPILED_LOCK:
        entry = _COMPILED.get(key)
    if entry is not None:
        return entry[0]
    dataset = DATASETS[task.dataset]
    query, size = compile_for_split(task.query, split, dataset)
    if needs_records(task.query, dataset):
        query, size = _verified(split, query, task.query, dataset)
    if size <= COMPILED_CACHE_BYTES // 8:  # one query never pushes out most of the others
        with _COMPILED_LOCK:
            _COMPILED[key] = (query, size)
    return query


# A query with parts the index answers only as a superset (case-sensitive,
# RE2 searches, substrings across tokens, field comparisons: Sigma's) has
# each candidate record of a split read and matched; past this many
# candidates in one split it is refused, saying how to narrow it.
MAX_CANDIDATES = 200_000
VERIFY_BATCH = 4096


def _verified(split: Split, superset: Query, node: ast.Node, dataset) -> tuple[Query, int]:
    """The exact query: of the candidates (``superset``'s records), those the
    matcher, the reference meaning of the tree, accepts.

    Every count, hit, facet and histogram then runs on exactly those, as for
    any other query, and the result is cached for the next page. docIds are
    a fast field only (no terms: format 2), so the kept records are named as
    ``superset`` AND runs of docIds (ranges over the column), where a run is
    consecutive candidates all kept; or ``superset`` AND NOT the runs of
    rejected ones, whichever needs fewer ranges (each is a scan of the
    column: ~1 ms per 200k records).
    """
    searcher = split.searcher
    count = searcher.search(superset, 1).count
    if count == 0:
        return Query.empty_query(), 0
    if count > MAX_CANDIDATES:
        raise QueryError(
            f"the query's case-sensitive, regular-expression (re2), substring or field-comparison parts "
            f"need each candidate record read, and {count} records of one split qualify "
            f"(at most {MAX_CANDIDATES}); narrow it with a field term or a shorter time range"
        )
    res = searcher.search(superset, count, order_by_field="docid", order=tantivy.Order.Asc)
    docids = sorted(int(d) for d, _ in res.hits)
    match = compile_matcher(node, dataset)
    kept: set[int] = set()
    for at in range(0, len(docids), VERIFY_BATCH):  # a batch of records in memory at a time, not all
        bodies = split.bodies_of(docids[at : at + VERIFY_BATCH])
        kept.update(d for d, body in bodies.items() if match(orjson.loads(body)))
    if not kept:
        return Query.empty_query(), 0
    if len(kept) == len(docids):
        return superset, 1000
    keep_runs = _runs(docids, kept, True)
    drop_runs = _runs(docids, kept, False)
    runs, occur = (keep_runs, Occur.Must) if len(keep_runs) <= len(drop_runs) else (drop_runs, Occur.MustNot)
    ranges = Query.boolean_query(
        [(Occur.Should, Query.range_query(split.schema, "docid", FieldType.Unsigned, lo, hi)) for lo, hi in runs]
    )
    return Query.boolean_query([(Occur.Must, superset), (occur, ranges)]), 1000 + 200 * len(runs)


def _runs(docids: list[int], kept: set[int], keep: bool) -> list[tuple[int, int]]:
    """(first, last) docIds of each run of consecutive ``docids`` whose
    membership in ``kept`` is ``keep``."""
    runs: list[tuple[int, int]] = []
    start = last = None
    for d in docids:
        if (d in kept) == keep:
            if start is None:
                start = d
            last = d
        elif start is not None:
            runs.append((start, last))
            start = None
    if start is not None:
        runs.append((start, last))
    return runs


def run_leaf(split: Split, task: LeafTask) -> LeafResult:
    """Search one split for one task: the leaf work of embedded and cluster mode alike."""
    dataset = DATASETS[task.dataset]
    query = _compiled(split, task)
    leaf = Leaf(split, query)
    sort_field = "ts" if task.sort_path == dataset.time_field else split.fields.numbers.get(task.sort_path)
    total, hits = leaf.top(sort_field, task.sort_path, task.descending, task.k)
    facets = {path: leaf.facet(path) for path in task.facets} if total else {}
    hist = {name: leaf.histogram(starts, end) for name, starts, end in task.histograms} if total else {}
    if not (task.catalog and total):
        return LeafResult(total, hits, facets, hist)
    paths = leaf.paths()
    fields = split.fields
    kinds = {}
    for kind, typed in (("text", fields.texts), ("ip", fields.ips), ("number", fields.numbers)):
        kinds.update((p, kind) for p in typed if p in paths)
    return LeafResult(total, hits, facets, hist, paths, kinds)


def fetch_sources(split: Split, docids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The records of ``docids`` in this split, by docId (the fetch phase across processes)."""
    return {d: orjson.loads(body) for d, body in split.bodies_of(docids).items()}


def _key(value, docid: int, descending: bool) -> tuple:
    if value is None:
        return (MISSING, 0, -docid if descending else docid)
    return (0, -value, -docid) if descending else (0, value, docid)


class Leaf:
    def __init__(self, split: Split, query: Query):
        self.split = split
        self.searcher = split.searcher
        self.schema = split.schema
        self.query = query

    def _and(self, *clauses: tuple[Occur, Query]) -> Query:
        return Query.boolean_query([(Occur.Must, self.query), *clauses])

    def count(self) -> int:
        return self.searcher.search(self.query, 1).count

    def top(self, sort_field: str | None, sort_path: str | None, descending: bool, k: int) -> tuple[int, list[LeafHit]]:
        """The total and the best ``k`` hits of this split."""
        if k <= 0:
            return self.count(), []
        order = tantivy.Order.Desc if descending else tantivy.Order.Asc
        if sort_field is None:
            # No record of this split holds the sort value: all tie, by docId.
            res = self.searcher.search(self.query, k, order_by_field="docid", order=order)
            return res.count, [self._hit(None, docid, a, descending) for docid, a in res.hits]
        if sort_field == "ts":
            present, total = self.query, None
        else:
            present = self._and((Occur.Must, self.split.exists_query(sort_path)))
        res = self.searcher.search(present, k, order_by_field=sort_field, order=order)
        hits = self._with_ties(present, res, sort_field, descending, k)
        total = res.count if sort_field == "ts" else self.count()
        if len(hits) < k and total > res.count:
            missing = self._and((Occur.MustNot, self.split.exists_query(sort_path)))
            more = self.searcher.search(missing, k - len(hits), order_by_field="docid", order=order)
            hits.extend(self._hit(None, docid, a, descending) for docid, a in more.hits)
        return total, hits

    def _with_ties(self, query: Query, res, sort_field: str, descending: bool, k: int) -> list[LeafHit]:
        addrs = [a for _, a in res.hits]
        docids = self.searcher.fast_field_values("docid", addrs) if addrs else []
        hits = [self._hit(v, d, a, descending) for (v, a), d in zip(res.hits, docids)]
        if len(hits) < k or res.count <= k:
            hits.sort(key=lambda h: h.key)
            return hits
        boundary = hits[-1].sort_value
        better = [h for h in hits if h.sort_value != boundary]
        ftype = FieldType.Integer if sort_field == "ts" else FieldType.Float
        ties_q = Query.boolean_query(
            [(Occur.Must, query), (Occur.Must, Query.range_query(self.schema, sort_field, ftype, boundary, boundary))]
        )
        order = tantivy.Order.Desc if descending else tantivy.Order.Asc
        ties = self.searcher.search(ties_q, k - len(better), order_by_field="docid", order=order)
        hits = better + [self._hit(boundary, docid, a, descending) for docid, a in ties.hits]
        hits.sort(key=lambda h: h.key)
        return hits

    def _hit(self, value, docid: int, address, descending: bool) -> LeafHit:
        return LeafHit(_key(value, docid, descending), value, int(docid), address, self.split.meta.split_id)

    def facet(self, path: str) -> FacetCounts:
        counts = FacetCounts()
        prefix = path + SEP
        if self.split.meta.format_version == 1:  # every record's spelling in ``fr``
            for term, n in self.searcher.terms_with_prefix("fr", prefix, filter_query=self.query):
                if n > 0:
                    norm, _, spelling = term[len(prefix):].partition(SEP)
                    counts.add(norm, spelling, n)
            return counts
        # Format 2: records per keyword in ``kw``; ``fr`` holds only the
        # spellings that are not the keyword itself.
        cut = len(prefix)
        for term, n in self.searcher.terms_with_prefix("kw", prefix, filter_query=self.query):
            if n > 0:
                norm = term[cut:]
                counts.counts[norm] = counts.counts.get(norm, 0) + n
        for term, n in self.searcher.terms_with_prefix("fr", prefix, filter_query=self.query):
            if n > 0:
                norm, _, spelling = term[cut:].partition(SEP)
                if norm in counts.counts:  # else a keyword holding SEP, cut ambiguously: shown as itself
                    counts.spelt(norm, spelling, n)
        return counts

    def paths(self) -> dict[str, int]:
        """Matching records per record path: the existence terms and the
        records of each shape (format 3), counted under the query."""
        counts = {term: n for term, n in self.searcher.terms_with_prefix("ex", "", filter_query=self.query,
                                                                         limit=CATALOG_PATHS) if n > 0}
        shapes = self.split.meta.shapes
        if shapes is not None:
            shapes.count_paths(self.searcher.terms_with_prefix("sh", "", filter_query=self.query), counts)
            if len(counts) > CATALOG_PATHS:
                counts = dict(heapq.nlargest(CATALOG_PATHS, counts.items(), key=lambda item: item[1]))
        return counts

    def histogram(self, starts: tuple[int, ...], end: int) -> list[int]:
        if not starts:
            return []
        edges = list(starts) + [end]
        widths = {b - a for a, b in zip(edges, edges[1:])}
        if len(widths) == 1:
            # Equal buckets (UTC minutes, hours, days...): tantivy's histogram
            # aggregation, several times cheaper than one range per bucket.
            # Keys outside ``starts`` hold records outside the buckets.
            interval = widths.pop()
            spec = {"histogram": {"field": "ts", "interval": float(interval), "offset": float(starts[0] % interval)}}
            out = self.searcher.aggregate(self.query, {"h": spec})
            by_key = {int(b["key"]): b["doc_count"] for b in out["h"]["buckets"]}
            return [by_key.get(s, 0) for s in starts]
        ranges = [{"from": float(a), "to": float(b)} for a, b in zip(edges, edges[1:])]
        out = self.searcher.aggregate(self.query, {"h": {"range": {"field": "ts", "ranges": ranges}}})
        counts = {}
        for b in out["h"]["buckets"]:
            if "from" in b and "to" in b:
                counts[int(b["from"])] = b["doc_count"]
        return [counts.get(s, 0) for s in starts]
