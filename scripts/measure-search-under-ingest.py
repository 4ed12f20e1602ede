"""Which work slows searches while an import runs (issue 45), told apart on one server.

The arrivals stage of ``make bench`` (bench/arrivals.py) says how much
slower searches get under a full-speed import; this says why. One server, a
lake of the bench's data made and merged first; two importers post the
bench's batches (30 days of events) back to back while searches arrive at
4 a second (open loop, each timed from its arrival, as the stage does).
Every 4 s the state changes, in turn:

- ``full``: the import runs and the split builders build;
- ``nobuild``: the import runs, the build workers are stopped (SIGSTOP): what
  the server's own ingest work (HTTP, parsing, rules, the log) costs searches
  (a batch of splits all under 500 records is built in the server's indexer
  thread, ``builder.WORKER_THRESHOLD``, and goes on until one needs a worker);
- ``noimport``: the importers wait, the builders catch up on the backlog:
  what the builders' CPU and the splits they publish cost;
- ``quiet``: both held.

Searches arriving in the first 1.5 s of a state are left out (an import
in flight when the importers stop still ends). States are interleaved, so
the other work of a shared machine weighs on each alike. Then the lake
left behind, at rest, against the merged lake it started from, searched
in turns: what the published splits alone cost (the import spreads over
30 days, so each flush makes a split per day and dataset).

    .venv/bin/python scripts/measure-search-under-ingest.py [seconds] [SECLAKE_SETTING=value ...]

Settings given are the server's (e.g. SECLAKE_BUILD_NICENESS=0). The
figures of docs/operations.md ("Where searches wait under an import")
come from it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from seclake.bench import data as bench_data  # noqa: E402
from seclake.bench.classes import CLASSES  # noqa: E402
from seclake.bench.cpu import _stat  # noqa: E402
from seclake.bench.engines import CALLS, kargs_of, requests_of  # noqa: E402
from seclake.bench.ingest import wait_quiet  # noqa: E402
from seclake.bench.load import percentile  # noqa: E402
from seclake.bench.server import Server  # noqa: E402

WINDOW, SKIP, RATE = 4.0, 1.5, 4.0
STATES = ("full", "nobuild", "noimport", "quiet")
WORK = [(qc, opts) for qc in CLASSES for _, opts in requests_of(qc)]


def builders(server_pid: int) -> list[int]:
    """The split builders of a server (they name themselves, seclake/workers.py)."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and (stat := _stat(int(p.name))) is not None:
            name, parent, _nice, _seconds = stat
            if parent == server_pid and name == "seclake-build":
                found.append(int(p.name))
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def splits(lake: Path) -> int:
    with sqlite3.connect(lake / "seclake.db") as db:
        return db.execute("select count(*) from splits where state = 'published'").fetchone()[0]


def states(srv: Server, batches: list, seconds: float) -> dict[str, list[float]]:
    importing, done, lock = threading.Event(), threading.Event(), threading.Lock()
    cycle = itertools.cycle(batches)
    timeline: list[tuple[float, str]] = []

    def importer() -> None:
        with srv.client() as http:
            while not done.is_set():
                if not importing.wait(0.1):
                    continue
                with lock:
                    b = next(cycle)
                http.post(f"/api/import/{b.vendor}", params={"type": b.dataset, "customer": b.customer},
                          content=Path(b.path).read_bytes())

    def driver() -> None:
        for i in itertools.count():
            if done.is_set():
                break
            state = STATES[i % len(STATES)]
            (importing.set if state in ("full", "nobuild") else importing.clear)()
            signal_all(builders(srv.proc.pid), signal.SIGSTOP if state in ("nobuild", "quiet") else signal.SIGCONT)
            timeline.append((time.perf_counter(), state))
            done.wait(WINDOW)
        signal_all(builders(srv.proc.pid), signal.SIGCONT)

    async def arrivals() -> list[tuple[float, float]]:
        rnd, out = random.Random(11), []
        async with httpx.AsyncClient(base_url=srv.url, headers=srv.headers, timeout=300,
                                     limits=httpx.Limits(max_connections=None)) as http:
            async def one(at: float, qc, opts) -> None:
                await asyncio.sleep(max(0.0, at - time.perf_counter()))
                r = await http.post(f"/api/{CALLS[qc.kind]}", json={"kargs": kargs_of(qc, opts)})
                r.raise_for_status()
                out.append((at, time.perf_counter() - at))
            start = time.perf_counter() + 0.2
            await asyncio.gather(*(one(start + i / RATE, *WORK[int(rnd.random() * len(WORK))])
                                   for i in range(int(RATE * seconds))))
        return out

    threads = [threading.Thread(target=importer) for _ in range(2)] + [threading.Thread(target=driver)]
    for t in threads:
        t.start()
    try:
        timed = asyncio.run(arrivals())
    finally:
        done.set()
        importing.set()
        for t in threads:
            t.join()
    by: dict[str, list[float]] = {s: [] for s in STATES}
    for at, latency in timed:
        began, state = max(((t, s) for t, s in timeline if t <= at), default=(0.0, None))
        if state is not None and at - began >= SKIP:
            by[state].append(latency)
    return by


def at_rest(lakes: dict[str, Path], rounds: int) -> dict[str, list[float]]:
    """Each lake on a server of its own, searched in turns (quiet days are not merged meanwhile;
    tier merges may start, so the figures after the import are if anything low)."""
    servers = {name: Server(lake, lake.parent / f"{name}.log", env={"SECLAKE_MERGE_QUIET_SECONDS": "86400"})
               for name, lake in lakes.items()}
    out: dict[str, list[float]] = {name: [] for name in lakes}
    try:
        for srv in servers.values():
            srv.start()
        clients = {name: srv.client() for name, srv in servers.items()}
        rnd = random.Random(11)
        for i in range(rounds):
            qc, opts = WORK[int(rnd.random() * len(WORK))]
            for name in (list(clients) if i % 2 else list(clients)[::-1]):
                t = time.perf_counter()
                clients[name].post(f"/api/{CALLS[qc.kind]}", json={"kargs": kargs_of(qc, opts)}).raise_for_status()
                out[name].append(time.perf_counter() - t)
    finally:
        for srv in servers.values():
            srv.stop()
    return out


def show(label: str, v: list[float]) -> None:
    v = sorted(v)
    print(f"{label:22s} n={len(v):3d}  p50 {percentile(v, 50) * 1000:6.1f} ms  p90 {percentile(v, 90) * 1000:6.1f} ms  "
          f"p99 {percentile(v, 99) * 1000:6.1f} ms", flush=True)


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 and "=" not in sys.argv[1] else 120.0
    env = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    root = Path(tempfile.mkdtemp(prefix="seclake-under-ingest-"))
    try:
        base = bench_data.write_batches(root / "base", events=50_000, days=30)
        more = bench_data.write_batches(root / "more", events=50_000, days=30, seed=bench_data.SEED + 2)
        seed = root / "seed"
        os.environ["SECLAKE_MERGE_QUIET_SECONDS"] = "5"  # the seed lake merged, as a lake at rest is
        srv = Server(seed, root / "seed.log")
        srv.start()
        with srv.client() as http:
            for b in base.batches:
                http.post(f"/api/import/{b.vendor}", params={"type": b.dataset, "customer": b.customer},
                          content=Path(b.path).read_bytes()).raise_for_status()
        wait_quiet(seed)
        srv.stop()
        del os.environ["SECLAKE_MERGE_QUIET_SECONDS"]
        lake = root / "lake"
        shutil.copytree(seed, lake)
        srv = Server(lake, root / "server.log", env=env)
        srv.start()
        try:
            by = states(srv, more.batches, seconds)
        finally:
            srv.stop()
        print(f"server settings: {env or 'defaults'}; load average {os.getloadavg()[0]:.1f}")
        for state in STATES:
            show(state, by[state])
        print(f"published splits: {splits(seed)} before the import, {splits(lake)} after")
        rest = at_rest({"merged": seed, "after the import": lake}, rounds=100)
        for name, v in rest.items():
            show(f"at rest, {name}", v)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
