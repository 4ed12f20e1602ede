"""Ingest through the real paths: the import API over HTTP and ``seclake import``.

Both run with the starter rule pack enabled (installed on first start of a
fresh data dir), so behaviors and summaries are made as records arrive.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from seclake.bench.cpu import CpuMeter
from seclake.bench.data import DataSet
from seclake.bench.server import Server, bench_env, count


def du_bytes(path: Path) -> int:
    """Bytes on disk under ``path`` (allocated blocks, as du counts them)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def written_back() -> None:
    """Write the page cache back before a timed ingest starts: the batch files just generated,
    or the last run's lake, are then not written back during the run, where the log's fsyncs
    would wait behind them."""
    os.sync()


def http_ingest(server: Server, data: DataSet, *, clients: int = 3, searchable_timeout: float = 1800.0) -> dict[str, Any]:
    """POST every batch to ``/api/import/{vendor}`` from ``clients`` concurrent keep-alive clients."""
    batches = list(data.batches)
    lock = threading.Lock()
    totals = {"accepted": 0, "raw": 0, "rejected": 0, "requests": 0}
    stored = {"event": 0, "flow": 0}
    latencies: list[float] = []
    errors: list[str] = []

    def worker() -> None:
        with server.client() as http:
            while True:
                with lock:
                    if not batches or errors:
                        return
                    b = batches.pop(0)
                body = Path(b.path).read_bytes()
                t = time.perf_counter()
                r = http.post(f"/api/import/{b.vendor}", params={"type": b.dataset, "customer": b.customer},
                              content=body)
                dt = time.perf_counter() - t
                reply = r.json()
                with lock:
                    if r.status_code != 200 or reply.get("verdict") != "OK":
                        errors.append(f"{b.path}: {r.status_code} {str(reply)[:300]}")
                        return
                    rep = reply["response"]
                    for k in ("accepted", "raw", "rejected"):
                        totals[k] += rep[k]
                    totals["requests"] += 1
                    stored[b.dataset] += rep["stored"]
                    latencies.append(dt)

    assert server.proc is not None
    written_back()
    cpu = CpuMeter(server.proc.pid)
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(worker) for _ in range(clients)]:
            f.result()
    last_reply = time.perf_counter()
    if errors:
        raise RuntimeError("import over HTTP failed: " + errors[0])
    # Seconds to searchable: from the last import reply until a search sees every record.
    with server.client() as http:
        deadline = time.monotonic() + searchable_timeout
        while True:
            seen = {ds: count(http, ds) for ds in stored}
            if all(seen[ds] >= stored[ds] for ds in stored):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"records not searchable after {searchable_timeout}s: {seen} of {stored}")
            time.sleep(0.05)
    searchable = time.perf_counter() - last_reply
    seconds = last_reply - started
    spent = cpu.per_line(data.lines)
    latencies.sort()
    return {
        "path": "http",
        "clients": clients,
        "lines": data.lines,
        **totals,
        "stored": stored,
        "seconds": seconds,
        "events_per_second": data.lines / seconds if seconds else None,
        # Accepted (durable in the log) is not searchable: the rate to searchable counts indexing too.
        "searchable_events_per_second": data.lines / (seconds + searchable) if seconds + searchable else None,
        "request_p50_seconds": latencies[len(latencies) // 2] if latencies else None,
        "request_max_seconds": latencies[-1] if latencies else None,
        "seconds_to_searchable": searchable,
        "server_peak_rss_kb_after_ingest": server.peak_rss_kb(),
        # Where the CPU went, from the first request until every record was searchable.
        "cpu": spent,
    }


def sample(data: DataSet, max_lines: int | None) -> tuple[list, int]:
    """The first batches up to ``max_lines`` lines (all with None), and their lines:
    a sample of every source, as the batches come in time order."""
    chosen, lines = [], 0
    for b in data.batches:
        if max_lines is not None and lines >= max_lines:
            break
        chosen.append(b)
        lines += b.lines
    return chosen, lines


# Parse workers of the scaling stage's third run (its 2 cores and ``parse_workers`` on).
PARSE_WORKERS = 2


def _fresh_http(part: DataSet, directory: Path, *, clients: int, cores: int | None = None,
                env: dict[str, str] | None = None) -> dict[str, Any]:
    """The HTTP ingest of ``part`` on a fresh server of its own, removed after."""
    server = Server(directory, directory.parent / "server.log", cores=cores, env=env)
    server.start()
    try:
        return http_ingest(server, part, clients=clients)
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _part(data: DataSet, max_lines: int | None) -> DataSet:
    chosen, lines = sample(data, max_lines)
    return dataclasses.replace(data, batches=chosen, lines=lines)


# The order of the scaling stage's pinned runs. In turns, so that a drift of the shared machine's
# speed weighs on both sides alike (one after the other, a run once read 1.47x where others read
# 1.73-1.90x: its 2-core run spent 18% more CPU per line). 2, 1, 2 on 100,000 lines (1.80x, 1.93x)
# rather than 1, 2, 2, 1 on 60,000 (1.69x): the same balance, and the drain at the end (the last
# flush built on one worker) weighs less in longer runs.
CORE_TURNS = (2, 1, 2)


def scaling_ingest(data: DataSet, directory: Path, max_lines: int, *, clients: int = 3) -> dict[Any, dict[str, Any]]:
    """The HTTP ingest of a sample on a fresh server pinned to 1 core and to 2 (taskset) in
    ``CORE_TURNS`` (keys 1 and 2: the means of their runs, ``_mean_of``); then on 2 cores with
    ``PARSE_WORKERS`` parse workers (key ``parse_workers``): the server process's CPU per line
    with and without them, side by side."""
    part = _part(data, max_lines)
    runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    for n, cores in enumerate(CORE_TURNS):
        runs[cores].append(_fresh_http(part, directory / f"{cores}-cores-{n}", clients=clients, cores=cores))
    out: dict[Any, dict[str, Any]] = {cores: _mean_of(r) for cores, r in runs.items()}
    out["parse_workers"] = _fresh_http(part, directory / "parse-workers", clients=clients, cores=2,
                                       env={"SECLAKE_PARSE_WORKERS": str(PARSE_WORKERS)})
    out["parse_workers"]["parse_workers"] = PARSE_WORKERS
    return out


# The order of the command's and HTTP's runs on the same sample: a drift of the shared
# machine's speed over the four runs (the bench measured its floor 0.77x of the run before)
# weighs on both alike, which running one after the other did not.
TURNS = ("cli", "http", "http", "cli")


def cli_against_http(data: DataSet, directory: Path, log_path: Path, max_lines: int | None, *,
                     clients: int = 3) -> tuple[dict[str, Any], dict[str, Any]]:
    """``seclake import`` and the HTTP ingest of the same sample, each on a fresh data dir, in
    ``TURNS``: one row for each path, its seconds the mean of its runs (each run's under ``turns``)."""
    runs: dict[str, list[dict[str, Any]]] = {"cli": [], "http": []}
    for n, path in enumerate(TURNS):
        if path == "cli":
            lake = directory / f"cli-{n}"
            runs["cli"].append(cli_ingest(data, lake, log_path, max_lines))
            shutil.rmtree(lake, ignore_errors=True)
        else:
            runs["http"].append(_fresh_http(_part(data, max_lines), directory / f"http-{n}", clients=clients))
    return _mean_of(runs["cli"]), _mean_of(runs["http"])


def _mean_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row for runs of the same lines: the first run's, with the mean of the runs' seconds and
    the rates from those means, and the mean of their CPU per line where they measured it."""
    row = dict(runs[0])
    seconds = sum(r["seconds"] for r in runs) / len(runs)
    searchable = sum(r["seconds_to_searchable"] for r in runs) / len(runs)
    lines = row["lines"]
    row.update(seconds=seconds, seconds_to_searchable=searchable,
               events_per_second=lines / seconds if seconds else None,
               searchable_events_per_second=lines / (seconds + searchable) if seconds + searchable else None,
               turns=[{"seconds": r["seconds"], "seconds_to_searchable": r["seconds_to_searchable"]} for r in runs])
    spent = [r["cpu"] for r in runs if (r.get("cpu") or {}).get("us_per_line")]
    if len(spent) == len(runs):
        row["cpu"] = {
            "us_per_line": {k: sum(c["us_per_line"].get(k, 0.0) for c in spent) / len(spent) for k in spent[0]["us_per_line"]},
            **{k: sum(c[k] for c in spent) / len(spent) for k in ("total_us_per_line", "wall_seconds", "busy")
               if all(c.get(k) is not None for c in spent)},
        }
    return row


def cli_ingest(data: DataSet, data_dir: Path, log_path: Path, max_lines: int | None = None) -> dict[str, Any]:
    """``seclake import`` of the batch files on a fresh data dir: one command, its
    manifest naming each file's vendor, type and customer, as an operator imports an archive.

    With ``max_lines``, only the first batches up to that many lines (a sample
    of every source, as the batches come in time order): the rate is a rate.
    """
    import csv

    data_dir.mkdir(parents=True, exist_ok=True)
    env = bench_env(data_dir)
    chosen, lines = sample(data, max_lines)
    manifest = data_dir.parent / f"{data_dir.name}-sources.csv"
    with open(manifest, "w", newline="") as f:
        rows = csv.writer(f)
        rows.writerow(["path", "vendor", "type", "customer"])
        # Absolute: a relative path in a manifest is the manifest's, and the batches' are the bench's.
        rows.writerows([Path(b.path).resolve(), b.vendor, b.dataset, b.customer] for b in chosen)
    sources = len({(b.vendor, b.dataset, b.customer) for b in chosen})
    commands = 1
    written_back()
    started = time.perf_counter()
    with open(log_path, "ab") as log:
        cmd = [sys.executable, "-m", "seclake", "import", "--manifest", str(manifest), "--data-dir", str(data_dir)]
        r = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise RuntimeError(f"seclake import exited with {r.returncode}; see {log_path}")
    seconds = time.perf_counter() - started
    # ru_maxrss of waited-for children: the largest peak of any import process, in kB.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    lake = data_dir / "lake"
    disk = du_bytes(lake)
    return {
        "path": "cli",
        "commands": commands,
        "sources": sources,
        "lines": lines,
        "sample_of": data.lines,
        "seconds": seconds,
        "events_per_second": lines / seconds if seconds else None,
        "searchable_events_per_second": lines / seconds if seconds else None,
        "seconds_to_searchable": 0.0,  # the command indexes everything before it exits
        "lake_bytes": disk,
        "bytes_per_event": disk / lines if lines else None,
        "peak_rss_kb_children": peak,
    }


def wait_quiet(data_dir: Path, timeout: float = 900.0) -> float:
    """Wait until the lake of ``data_dir`` has nothing left to merge; seconds waited.

    Queries are timed over a lake at rest, and the read-only views of the
    engine layer and of raw tantivy open the same splits the server has.
    A day not yet quiet (setting ``merge_quiet_seconds`` since its newest split) counts
    as one to merge: merges that waited for a busy indexer leave days of
    several splits of different tiers, which only the quiet-day merge joins,
    and a lake with none to merge *now* was taken as at rest with up to 8
    splits a day (50 event splits where 30 were to come).
    """
    from seclake.db.database import Database
    from seclake.settings import load_settings
    from seclake.storage.catalog import PUBLISHED, Catalog
    from seclake.storage.merge import merge_candidates

    settings = load_settings(data_dir=data_dir)
    settle_ms = int(settings.merge_quiet_seconds * 1000)  # as the server's merger (bench_env passes it on)
    db = Database(settings.effective_database_url)
    catalog = Catalog(db)
    started = time.perf_counter()
    try:
        stable = 0
        last: set[str] = set()
        while True:
            entries = catalog.entries(PUBLISHED)
            ids = {e.split_id for e in entries}
            settled = not merge_candidates(entries, now_ms=int(time.time() * 1000) + settle_ms, settle_ms=settle_ms)
            stable = stable + 1 if ids == last and settled else 0
            last = ids
            if stable >= 3:
                return time.perf_counter() - started
            if time.perf_counter() - started > timeout:
                raise RuntimeError(f"the lake in {data_dir} still merges after {timeout}s")
            time.sleep(1.0)
    finally:
        db.dispose()
