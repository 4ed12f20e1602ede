"""Running the rules over stored events: ``seclake rules run --from T --to T``.

The records are taken in the order they were logged (docId), the order
streaming saw them in, through a detector with fresh state; so a backfill of
data imported without rules gives the behaviors streaming would have given.
The behaviors are logged like any other and folded into the summaries.
"""

from __future__ import annotations

import heapq
from typing import Any

from seclake.detect.detector import SOURCE_DATASETS, Detector
from seclake.record.identity import RecordIds
from seclake.record.dataset import DATASETS, time_of
from seclake.service.ingestion import Ingestion
from seclake.storage.lake import Lake


def stored_records(lake: Lake, time_from: int | None, time_to: int | None):
    """(docId, dataset, record) of stored events and flows in the range, in docId order."""
    streams = []
    for dataset in SOURCE_DATASETS:
        ds = DATASETS[dataset]
        for split in lake.splits(dataset, time_from, time_to):
            rows = [
                (r.docid, dataset, r.source)
                for r in split.all_records()
                if (time_from is None or time_of(r.source, ds) >= time_from)
                and (time_to is None or time_of(r.source, ds) <= time_to)
            ]
            streams.append(rows)
    return heapq.merge(*streams, key=lambda row: row[0])


def backfill(
    ingestion: Ingestion, rulebook, bands, time_from: int | None, time_to: int | None, ids: RecordIds | None = None
) -> dict[str, Any]:
    lake = ingestion.lake
    lake.flush()
    detector = Detector(rulebook, None, bands=bands, ids=(lambda: ids) if ids is not None else None)
    behaviors: list[dict[str, Any]] = []
    scanned = 0
    for docid, dataset, record in stored_records(lake, time_from, time_to):
        behaviors.extend(detector.process([(dataset, record)], docid))
        scanned += 1
    first, last = ingestion.append_behaviors(behaviors)
    return {"scanned": scanned, "behaviors": len(behaviors), "firstDocId": first, "lastDocId": last}
