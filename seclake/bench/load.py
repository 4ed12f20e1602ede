"""The load test: concurrent mixed searches over HTTP while an import runs.

``clients`` coroutines each send one request after another (a class drawn
with a fixed seed, offset 0 with facets or offset 1000) for ``seconds``;
beside them one thread keeps posting import batches. Every answer that is
not HTTP 200 with verdict OK is an error, and any error fails the run.
All traffic goes to 127.0.0.1 and stops at the deadline.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from seclake.bench.classes import CLASSES
from seclake.bench.data import DataSet
from seclake.bench.engines import CALLS, kargs_of, requests_of


def percentile(sorted_values: list[float], p: float) -> float | None:
    """The nearest-rank percentile ``p`` of values sorted already."""
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[i]


async def _clients(url: str, token: str, clients: int, seconds: float, seed: int) -> dict[str, Any]:
    work = [(qc, opts) for qc in CLASSES for _, opts in requests_of(qc)]
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers={"Servicetoken": token}, timeout=120, limits=limits) as http:

        async def client(i: int) -> None:
            rnd = random.Random(seed * 1000 + i)
            while time.perf_counter() < deadline:
                qc, opts = work[int(rnd.random() * len(work))]
                t = time.perf_counter()
                try:
                    r = await http.post(f"/api/{CALLS[qc.kind]}", json={"kargs": kargs_of(qc, opts)})
                    ok = r.status_code == 200 and r.json().get("verdict") == "OK"
                    if not ok:
                        errors.append(f"{qc.name}: {r.status_code} {r.text[:200]}")
                except httpx.HTTPError as e:
                    errors.append(f"{qc.name}: {type(e).__name__} {e}")
                latencies.append(time.perf_counter() - t)

        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {"requests": len(latencies), "elapsed_seconds": elapsed,
            "throughput_per_second": len(latencies) / elapsed if elapsed else None,
            "p50_seconds": percentile(latencies, 50), "p99_seconds": percentile(latencies, 99),
            "max_seconds": latencies[-1] if latencies else None,
            "errors": len(errors), "error_samples": errors[:10]}


def run_load(url: str, token: str, import_data: DataSet | None, *, clients: int, seconds: float, seed: int = 7) -> dict[str, Any]:
    stop = threading.Event()
    imported = {"lines": 0, "requests": 0, "errors": 0, "error_samples": []}

    def importer() -> None:
        with httpx.Client(base_url=url, headers={"Servicetoken": token}, timeout=120) as http:
            for b in import_data.batches:
                if stop.is_set():
                    return
                try:
                    r = http.post(f"/api/import/{b.vendor}", params={"type": b.dataset, "customer": b.customer},
                                  content=Path(b.path).read_bytes())
                    if r.status_code == 200 and r.json().get("verdict") == "OK":
                        imported["lines"] += b.lines
                        imported["requests"] += 1
                    else:
                        imported["errors"] += 1
                        imported["error_samples"].append(f"{r.status_code} {r.text[:200]}")
                except httpx.HTTPError as e:
                    imported["errors"] += 1
                    imported["error_samples"].append(f"{type(e).__name__} {e}")

    # No import data: searches only (the cluster stage's API node does not ingest).
    thread = threading.Thread(target=importer, name="bench-load-import", daemon=True)
    if import_data is not None:
        thread.start()
    try:
        result = asyncio.run(_clients(url, token, clients, seconds, seed))
    finally:
        stop.set()
        if import_data is not None:
            thread.join(timeout=120)
    result["clients"] = clients
    result["seconds"] = seconds
    result["import"] = imported if import_data is not None else None
    result["import_ran_throughout"] = (thread.is_alive() or imported["lines"] < import_data.lines
                                       if import_data is not None else None)
    result["mix"] = [qc.name for qc in CLASSES]
    return result
