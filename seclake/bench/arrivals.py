"""Searches arriving at a fixed rate, idle and during a full-speed import (issue 45's measure).

The load test (``bench/load.py``) is closed-loop: each client sends its next
search when the last one is answered, so a slower server is sent fewer
searches and the figures hide how long an analyst waits. Here searches
arrive on a schedule (``rate`` per second, one every ``1/rate`` s, the
classes drawn with a fixed seed), whatever the server does, and each is
timed from its scheduled arrival: time spent queued counts, as it does for
a person who pressed Enter.

Three phases of ``seconds`` each, one after the other on the same server:
the searches alone (their latency when the server is idle, and the share of
the machine's CPU they take), the import alone as fast as it can
(``IMPORTERS`` posting batches back to back), then both at once; each
phase starts once every record acknowledged before it is searchable
(``caught_up``), and each import phase says how far searchability fell
behind (the server's log lag, sampled) and how long it took to catch up
after it: the freshness a lower priority for the builders costs. The
targets the report judges: during the import, search p50 at most 1.5x and
p99 at most 2x their idle values; the import's rate at least
(1 - the searches' CPU share) of its rate alone.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from seclake.bench.classes import CLASSES
from seclake.bench.cpu import CpuMeter
from seclake.bench.data import DataSet
from seclake.bench.engines import CALLS, kargs_of, requests_of
from seclake.bench.load import percentile

IMPORTERS = 2  # batches in flight: the server parses one while it logs and indexes the other
P50_TARGET, P99_TARGET = 1.5, 2.0
LAG_EVERY = 0.5  # seconds between samples of the server's freshness lag


async def _arrivals(url: str, token: str, rate: float, seconds: float, seed: int) -> dict[str, Any]:
    work = [(qc, opts) for qc in CLASSES for _, opts in requests_of(qc)]
    rnd = random.Random(seed)
    latencies: list[float] = []
    errors: list[str] = []
    # No bound on connections: a bound would queue arrivals in the client, not the server.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=32)
    async with httpx.AsyncClient(base_url=url, headers={"Servicetoken": token}, timeout=300, limits=limits) as http:

        async def one(at: float, qc, opts) -> None:
            await asyncio.sleep(max(0.0, at - time.perf_counter()))
            try:
                r = await http.post(f"/api/{CALLS[qc.kind]}", json={"kargs": kargs_of(qc, opts)})
                if r.status_code != 200 or r.json().get("verdict") != "OK":
                    errors.append(f"{qc.name}: {r.status_code} {r.text[:200]}")
            except httpx.HTTPError as e:
                errors.append(f"{qc.name}: {type(e).__name__} {e}")
            latencies.append(time.perf_counter() - at)  # from its arrival, not from when it was sent

        start = time.perf_counter() + 0.1
        arrivals = int(rate * seconds)
        await asyncio.gather(*(one(start + i / rate, *work[int(rnd.random() * len(work))])
                               for i in range(arrivals)))
    latencies.sort()
    return {"rate": rate, "seconds": seconds, "requests": len(latencies),
            "p50_seconds": percentile(latencies, 50), "p99_seconds": percentile(latencies, 99),
            "max_seconds": latencies[-1] if latencies else None,
            "errors": len(errors), "error_samples": errors[:10]}


class _Importer:
    """``IMPORTERS`` threads posting the data's batches back to back (cycling), until stopped."""

    def __init__(self, url: str, token: str, data: DataSet):
        self.url, self.token = url, token
        self._batches = itertools.cycle(data.batches)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.lines = self.requests = self.errors = 0
        self.error_samples: list[str] = []
        self._threads = [threading.Thread(target=self._run, name=f"bench-arrivals-import-{i}", daemon=True)
                         for i in range(IMPORTERS)]
        self._threads.append(threading.Thread(target=self._lag, name="bench-arrivals-lag", daemon=True))
        # The server's records logged but not yet searchable (``seclake_log_lag_records``), sampled:
        # what a lower priority for the builders costs in freshness.
        self.lags: list[float] = []
        self.catch_up_seconds: float | None = None  # after the phase, until every record was searchable

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, headers={"Servicetoken": self.token}, timeout=300) as http:
            while not self._stop.is_set():
                with self._lock:
                    b = next(self._batches)
                try:
                    r = http.post(f"/api/import/{b.vendor}", params={"type": b.dataset, "customer": b.customer},
                                  content=Path(b.path).read_bytes())
                    ok = r.status_code == 200 and r.json().get("verdict") == "OK"
                except httpx.HTTPError as e:
                    ok, r = False, None
                    text = f"{type(e).__name__} {e}"
                with self._lock:
                    if ok:
                        self.lines += b.lines
                        self.requests += 1
                        self._last = time.perf_counter()
                    else:
                        self.errors += 1
                        if len(self.error_samples) < 10:
                            self.error_samples.append(text if r is None else f"{r.status_code} {r.text[:200]}")

    def _lag(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as http:
            while not self._stop.wait(LAG_EVERY):
                if (lag := _log_lag(http)) is not None:
                    self.lags.append(lag)

    def __enter__(self) -> _Importer:
        self._started = self._last = time.perf_counter()
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=300)
        # Up to the last answer, the batches in flight at the end included: a batch takes about a
        # second, and counting those over the phase's length alone made rates of a 15 s phase
        # jump by whole batches (runs of different settings came out equal to 4 digits).
        self.elapsed = self._last - self._started

    def result(self) -> dict[str, Any]:
        # Lines of the batches answered, over the time up to the last answer.
        rate = self.lines / self.elapsed if self.elapsed else None
        lag = sum(self.lags) / len(self.lags) if self.lags else None
        return {"lines": self.lines, "requests": self.requests, "errors": self.errors,
                "error_samples": self.error_samples, "seconds": self.elapsed, "lines_per_second": rate,
                # Mean records not yet searchable, and the seconds of import they are at this rate.
                "lag_records": lag, "lag_seconds": lag / rate if lag is not None and rate else None,
                "catch_up_seconds": self.catch_up_seconds}


def _log_lag(http: httpx.Client) -> float | None:
    """The server's records logged and not yet searchable (``seclake_log_lag_records`` of /metrics)."""
    try:
        text = http.get("/metrics").text
    except httpx.HTTPError:
        return None
    for line in text.splitlines():
        if line.startswith("seclake_log_lag_records "):
            return float(line.split()[1])
    return None


def caught_up(url: str, timeout: float) -> float:
    """Wait until every record the server acknowledged is searchable, ``timeout`` at most; the seconds waited.

    Imports are acknowledged once logged, and the log takes lines faster
    than the builders index them: up to ``flusher.MAX_PENDING`` records wait,
    then imports wait too. A phase that starts behind the last one's
    backlog runs at the builders' pace from its first second, one that
    starts caught up at the log's for a while: every phase starts caught up.
    """
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=30) as http:
        while _log_lag(http) != 0 and time.perf_counter() - started < timeout:
            time.sleep(LAG_EVERY)
    return time.perf_counter() - started


def run_arrivals(url: str, token: str, server_pid: int, import_data: DataSet, *, rate: float = 4.0,
                 seconds: float = 30.0, seed: int = 11) -> dict[str, Any]:
    """The three phases (module doc) and the targets judged."""
    # Twice a phase at most: the tiny runs of the tests (2 s phases) must not wait long, and a
    # wait that long says as much as a longer one (the report shows it).
    settle = 2 * seconds
    caught_up(url, settle)
    meter = CpuMeter(server_pid)
    idle = asyncio.run(_arrivals(url, token, rate, seconds, seed))
    used = meter.seconds()
    # What the searches take of the machine: the server's tree, every core counted.
    server_cpu = sum(v for k, v in used.items() if k != "bench client")
    share = server_cpu / (seconds * (os.cpu_count() or 1))
    with _Importer(url, token, import_data) as alone:
        time.sleep(seconds)
    # How long the records of each import phase took to become searchable after it (freshness).
    alone.catch_up_seconds = caught_up(url, settle)
    with _Importer(url, token, import_data) as during:
        loaded = asyncio.run(_arrivals(url, token, rate, seconds, seed))
    during.catch_up_seconds = caught_up(url, settle)
    alone_rate, during_rate = alone.result()["lines_per_second"], during.result()["lines_per_second"]
    p50 = loaded["p50_seconds"] / idle["p50_seconds"] if idle["p50_seconds"] and loaded["p50_seconds"] else None
    p99 = loaded["p99_seconds"] / idle["p99_seconds"] if idle["p99_seconds"] and loaded["p99_seconds"] else None
    kept = during_rate / alone_rate if alone_rate and during_rate is not None else None
    return {
        "rate": rate, "seconds": seconds, "mix": [qc.name for qc in CLASSES],
        "idle": idle, "during_import": loaded, "search_cpu_share": share,
        "import_alone": alone.result(), "import_during_searches": during.result(),
        "p50_ratio": p50, "p99_ratio": p99, "import_kept": kept,
        "targets": {
            "p50": p50 is not None and p50 <= P50_TARGET,
            "p99": p99 is not None and p99 <= P99_TARGET,
            "import": kept is not None and kept >= 1 - share,
        },
    }
