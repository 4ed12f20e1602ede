"""The source inventory: every source whose records are in the lake, with
its last event, its recent rate and its parse errors.

What Splunk's data summary and Kibana's data view show first. Made of
searches over the lake, not of counters the ingest path keeps, so it is true
after a restart, in cluster mode (the searches fan out over every node's
splits) and for every way records came in (imports, ``_bulk``, listeners),
and it obeys the caller's data policy like any search. Per dataset: one
search counts records per ``@source`` over everything kept, one over the
recent window, one the records no parser understood (kept raw: ``@fields``
empty, ``ingest/parser.py``); then one search per source reads its newest
record, which gives the last event time and how the source is described
(observer vendor and product, the ECS module or dataset, the Windows
provider or syslog program; whether a listener received it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seclake.query import ast
from seclake.record.dataset import Dataset
from seclake.record.flatten import values_at
from seclake.search.plan import FacetSpec, SearchPlan
from seclake.search.root import SearchResult

SOURCE_PATH = "@source"
RECENT_MINUTES = 60
# A record no parser understood is kept with an empty @fields (ingest/parser.py).
RAW = ast.Not(ast.Exists(path="@fields"))
# Who received it: listeners keep the sender's address here (ingest/record.sent_from).
SENDER_ADDRESS = "@fields.log.source.address"
# What a record says its source is, in this order: the device or service
# (ECS observer), the ECS module and log, the Windows provider, a syslog program.
DESCRIBING = ("@fields.observer.vendor", "@fields.observer.product", "@fields.event.module", "@fields.event.dataset",
              "@fields.event.provider", "@fields.program")


@dataclass
class SourceInfo:
    source: str  # @source: the vendor name records were stored under
    dataset: str  # event or flow
    records: int  # records kept
    recent: int  # records of the last RECENT_MINUTES (by event time)
    parse_errors: int  # records kept raw: no parser understood the line
    last_seen: int | None  # the newest record's @timestamp (epoch ms)
    received_by: str  # listener, or import (/api/import, _bulk, seclake import)
    describes: list[str] = field(default_factory=list)  # vendor, product, module, dataset of the newest record

    @property
    def per_minute(self) -> float:
        return self.recent / RECENT_MINUTES


@dataclass
class Inventory:
    sources: list[SourceInfo]
    failed: list[str] = field(default_factory=list)  # splits that gave no answer: counts are partial
    other_sources: int = 0  # records of sources beyond the ones listed


def _text(record: dict[str, Any], path: str) -> str | None:
    found = [v for v in values_at(record, path) if isinstance(v, str | int | float) and not isinstance(v, bool)]
    return str(found[0]) if found else None


def source_inventory(search: Callable[[SearchPlan], SearchResult], base: SearchPlan, dataset: Dataset, *,
                     now_ms: int, most: int = 100) -> Inventory:
    """The sources of the records ``base`` matches (its query and data policy; its range is ignored)."""
    counted = dataclasses.replace(base, range_from=None, range_to=None, offset=0, limit=0, catalog=False,
                                  facets=(FacetSpec(SOURCE_PATH, most),), histograms=())
    whole = search(counted)
    recent = search(dataclasses.replace(counted, range_from=now_ms - RECENT_MINUTES * 60_000, range_to=now_ms,
                                        range_path=dataset.time_field))
    raw = search(dataclasses.replace(counted, query=ast.and_(counted.query, RAW)))
    in_recent = {b.key: b.doc_count for b in recent.facets[SOURCE_PATH].buckets}
    in_raw = {b.key: b.doc_count for b in raw.facets[SOURCE_PATH].buckets}
    failed = {*whole.failed, *recent.failed, *raw.failed}
    sources = []
    for bucket in whole.facets[SOURCE_PATH].buckets:
        newest = search(dataclasses.replace(
            counted, query=ast.and_(counted.query, ast.Term(path=SOURCE_PATH, value=bucket.key)), limit=1,
            facets=(), sort_path=dataset.time_field, descending=True))
        failed.update(newest.failed)
        record = newest.hits[0].source if newest.hits else {}
        last = record.get(dataset.time_field)
        describes = []
        for path in DESCRIBING:
            text = _text(record, path)
            if text and text.lower() not in (d.lower() for d in describes):
                describes.append(text)
        sources.append(SourceInfo(
            source=bucket.key, dataset=dataset.name, records=bucket.doc_count, recent=in_recent.get(bucket.key, 0),
            parse_errors=in_raw.get(bucket.key, 0), last_seen=last if isinstance(last, int) else None,
            received_by="listener" if _text(record, SENDER_ADDRESS) else "import", describes=describes))
    return Inventory(sources, sorted(failed), whole.facets[SOURCE_PATH].sum_other_doc_count)
