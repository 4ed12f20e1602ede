"""A search as the engine sees it, after the wire format is translated.

The API layer validates the request and builds a ``SearchPlan``; the root
runs it over the splits of one dataset. Everything here is already resolved:
paths are record paths, the query tree includes filters and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seclake.query import ast


@dataclass(frozen=True)
class FacetSpec:
    path: str
    size: int


@dataclass(frozen=True)
class HistogramSpec:
    name: str
    # Bucket start times in epoch ms; the last bucket ends at ``end`` (exclusive).
    starts: tuple[int, ...]
    end: int


@dataclass(frozen=True)
class SearchPlan:
    dataset: str
    query: ast.Node
    range_from: int | None = None
    range_to: int | None = None
    # The path the range applies to; None means the dataset's time field.
    range_path: str | None = None
    sort_path: str | None = None
    descending: bool = True
    offset: int = 0
    limit: int = 10
    facets: tuple[FacetSpec, ...] = field(default_factory=tuple)
    histograms: tuple[HistogramSpec, ...] = field(default_factory=tuple)
    # Also count, per record path, the matching records holding it (SearchResult.paths).
    catalog: bool = False
    # Seconds the in-memory engine may spend before it stops with an error
    # (setting search_timeout_seconds); None: no bound.
    timeout: float | None = None
