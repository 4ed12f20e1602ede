"""The field catalog: which fields the records of a dataset hold, per source.

Built from searches, not from a separate inventory, so it obeys everything a
search obeys: the time range, the caller's query and data policy, exact
counts. Each split counts its records per path from its existence terms
(``LeafTask.catalog``); one search covers the whole range and the most
common sources, then one search per source gives that source's counts. The
example values come from the newest records each search returns, so they
cost a page read, never a scan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seclake.query import ast
from seclake.record.dataset import Dataset
from seclake.record.flatten import leaves
from seclake.search.plan import FacetSpec, SearchPlan
from seclake.search.root import SearchResult

SOURCE_PATH = "@source"
# Kinds in the order one wins over another when splits disagree: a path any
# split indexes as an address answers CIDR queries, one with numbers ranges.
_KIND_ORDER = ("text", "ip", "number")
MAX_EXAMPLE_CHARS = 120


@dataclass
class FieldInfo:
    name: str  # as a query names it (``user.name`` for ``@fields.user.name``)
    path: str  # the record path
    kind: str  # keyword, text, ip, number or date
    records: int  # matching records holding it
    sources: dict[str, int] = field(default_factory=dict)  # @source -> records holding it
    examples: list[str] = field(default_factory=list)


@dataclass
class Catalog:
    total: int  # matching records
    sources: list[tuple[str, int]]  # (source, records), most common first
    fields: list[FieldInfo]
    # Sources beyond the ones counted apart (their records are in the totals).
    other_sources: int = 0
    truncated: bool = False  # more fields than listed
    failed: list[str] = field(default_factory=list)


def short_name(path: str, dataset: Dataset) -> str:
    """The name a query uses for ``path``: without the implicit prefix when it resolves back."""
    prefix = dataset.implicit_prefix
    if prefix and path.startswith(prefix):
        name = path[len(prefix):]
        if dataset.resolve(name) == path:
            return name
    return path


def field_catalog(search: Callable[[SearchPlan], SearchResult], base: SearchPlan, dataset: Dataset, *,
                  sources: int = 20, examples: int = 3, sample: int = 100, max_fields: int = 1000) -> Catalog:
    """The catalog of the records ``base`` matches (its query, range and policy)."""
    plan = dataclasses.replace(base, catalog=True, offset=0, limit=sample, sort_path=dataset.time_field,
                               descending=True, facets=(FacetSpec(SOURCE_PATH, sources),), histograms=())
    whole = search(plan)
    facet = whole.facets[SOURCE_PATH]
    per_source: dict[str, SearchResult] = {}
    for bucket in facet.buckets:
        only = ast.and_(plan.query, ast.Term(path=SOURCE_PATH, value=bucket.key))
        per_source[bucket.key] = search(dataclasses.replace(plan, query=only, limit=min(sample, 20), facets=()))
    sampled: dict[str, list[str]] = {}
    for result in (whole, *per_source.values()):
        for hit in result.hits:
            _sample(hit.source, sampled, examples)
    parents = {p[:i] for p in whole.paths for i, c in enumerate(p) if c == "."}
    fields = []
    for path, n in whole.paths.items():
        # Objects are listed through their leaves, unless records also hold a value there.
        if path in parents and path not in sampled:
            continue
        kinds = whole.kinds.get(path, set())
        if path == dataset.time_field or dataset.is_date(path):
            kind = "date"  # epoch ms, also queried with dates and date math
        else:
            kind = next((k for k in _KIND_ORDER if k in kinds), "keyword")
        counts = {s: r.paths[path] for s, r in per_source.items() if r.paths.get(path)}
        fields.append(FieldInfo(short_name(path, dataset), path, kind, n, counts, sampled.get(path, [])))
    fields.sort(key=lambda f: (-f.records, f.name))
    failed = sorted({*whole.failed, *(s for r in per_source.values() for s in r.failed)})
    return Catalog(whole.total, [(b.key, b.doc_count) for b in facet.buckets], fields[:max_fields],
                   facet.sum_other_doc_count, len(fields) > max_fields, failed)


def _sample(record: dict[str, Any], out: dict[str, list[str]], limit: int) -> None:
    for path, value in leaves(record):
        seen = out.setdefault(path, [])
        if len(seen) >= limit:
            continue
        text = (str(value).lower() if isinstance(value, bool) else str(value))[:MAX_EXAMPLE_CHARS]
        if text not in seen:
            seen.append(text)
