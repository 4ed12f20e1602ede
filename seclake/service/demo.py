"""Loading demo data through the real ingestion path.

The generator writes raw log lines (syslog, CEF, JSON); they are imported in
chunks per vendor, dataset and customer exactly as ``POST /api/import``
would import them, so a newcomer searches what seclake really makes of logs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from seclake.demo.generator import generate
from seclake.service.ingestion import Ingestion

CHUNK = 2000


def load_demo(
    ingestion: Ingestion,
    *,
    days: int,
    end_ms: int | None = None,
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    end_ms = int(time.time() * 1000) if end_ms is None else end_ms
    totals = {"accepted": 0, "raw": 0, "rejected": 0}
    groups: dict[tuple[str, str, str], list[str]] = {}

    def flush(key: tuple[str, str, str]) -> None:
        lines = groups.pop(key, None)
        if not lines:
            return
        vendor, dataset, customer = key
        report = ingestion.import_body(
            "\n".join(lines).encode(),
            vendor=vendor,
            dataset=dataset,
            customer=customer or None,
            compressed=False,
            max_bytes=1 << 40,
        )
        for k in totals:
            totals[k] += report[k]
        if progress:
            progress(len(lines))

    for line in generate(days=days, end_ms=end_ms, seed=seed):
        key = (line.vendor, line.dataset, line.customer)
        bucket = groups.setdefault(key, [])
        bucket.append(line.line)
        if len(bucket) >= CHUNK:
            flush(key)
    for key in list(groups):
        flush(key)
    return totals
