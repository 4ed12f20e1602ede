"""The benchmark's cluster stage: cluster mode beside embedded mode, on the same lake, over HTTP.

After the 1x stages, the lake the benchmark built is served twice at once:
by an embedded ``seclake serve`` (it owns the lake: one writer) and by a
read-only cluster API node (``seclake serve --ray-address ... --no-ingest``
over the same data dir and database, as in docs/deploy-cluster.md) whose
searches fan out to searcher actors, one per Ray worker node. Every node is
a separate process on 127.0.0.1. Measured:

* fan-out overhead per class: warm medians of the same requests against the
  embedded node and the cluster node, first with 1 searcher, then with 2;
  every answer goes through the benchmark's agreement checker against the
  embedded answer;
* throughput against searcher count: the load test's concurrent mixed
  searches (no import: the read-only node does not ingest; the embedded
  node is loaded the same way, as the baseline).

All processes share this machine's cores: a second searcher adds
concurrency, not hardware, and the report says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from seclake.bench.agree import Agreement
from seclake.bench.classes import QueryClass
from seclake.bench.server import record_ids_of
from seclake.cluster import ray_missing

# Searchers list again every 2 s (SearcherDirectory): wait past that after adding one.
DIRECTORY_REFRESH = 2.0


def available() -> str | None:
    """Why the cluster stage cannot run here, or None."""
    return ray_missing()


def _searcher(address: str, data_dir: Path, node_id: str, env: dict[str, str], log: Path) -> None:
    """`seclake searcher --detach` pinned to one Ray node, as an operator would run it there."""
    with log.open("ab") as out:
        done = subprocess.run(
            [sys.executable, "-m", "seclake", "searcher", "--ray-address", address, "--data-dir", str(data_dir),
             # No indexers: the lake's writer here is the embedded node, outside Ray.
             "--node-id", node_id, "--indexers", "0", "--detach"],
            env=env, stdout=out, stderr=subprocess.STDOUT, timeout=300,
        )
    if done.returncode != 0:
        raise RuntimeError(f"seclake searcher exited with {done.returncode}; see {log}")


def splits_per_class(data_dir: Path, classes: list[QueryClass]) -> dict[str, int]:
    """Published splits in each class's time range: the leaves a search fans out to (summaries: none,
    they are read from the database by the API node itself)."""
    from seclake.db.database import Database
    from seclake.settings import load_settings
    from seclake.storage.catalog import PUBLISHED, Catalog

    db = Database(load_settings(data_dir=data_dir).effective_database_url)
    try:
        entries = Catalog(db).entries(PUBLISHED)
    finally:
        db.dispose()
    out = {}
    for qc in classes:
        dataset = {"timeline": "behavior", "summary": None}.get(qc.kind, "event")
        lo, hi = qc.window()
        out[qc.name] = sum(1 for e in entries if e.dataset == dataset and e.time_max >= lo and e.time_min <= hi)
    return out


def run_cluster(lake_dir: Path, log_dir: Path, classes: list[QueryClass], *, reps: int, load_seconds: float,
                clients: int, echo=print) -> dict[str, Any]:
    """The cluster stage over the data dir ``lake_dir`` (a lake at rest); its results (JSON-ready)."""
    from seclake.bench.engines import HttpEngine
    from seclake.bench.ingest import wait_quiet
    from seclake.bench.load import run_load
    from seclake.bench.runner import stats
    from seclake.bench.server import Server, bench_env
    from seclake.cluster.localray import LocalRayCluster

    out: dict[str, Any] = {"searcher_counts": [1, 2], "reps": reps, "queries": {c.name: {} for c in classes},
                           "load": {}, "cpus": len(os.sched_getaffinity(0))}
    agreement = Agreement()  # reference: "http", the embedded node
    samples: dict[tuple[str, str], list[float]] = {}
    started = time.perf_counter()

    def timed_round(engines: dict[str, HttpEngine], record: bool) -> None:
        for qc in classes:
            for name, engine in engines.items():  # interleaved: both nodes see the same machine load
                t = time.perf_counter()
                answer = engine.run(qc)
                dt = time.perf_counter() - t
                agreement.add(qc.name, name, answer)
                if record:
                    samples.setdefault((qc.name, name), []).append(dt)

    embedded = Server(lake_dir, log_dir / "cluster-embedded.log")
    nodes = LocalRayCluster(("b", "c"), log_dir)
    api: Server | None = None
    engines: dict[str, HttpEngine] = {}
    try:
        # The lake as the 1x stages left it, the load test's import included, at rest.
        embedded.start()
        out["settle_seconds"] = wait_quiet(lake_dir)
        out["splits"] = splits_per_class(lake_dir, classes)
        # Other work on this machine skews every figure: say how busy it was.
        out["load_average_at_start"] = os.getloadavg()[0]
        t = time.perf_counter()
        ids = nodes.start()
        nodes.disconnect()
        out["ray_start_seconds"] = time.perf_counter() - t
        settings = {"SECLAKE_RAY_NAMESPACE": f"seclake-bench-{os.getpid()}"}
        env = {**bench_env(lake_dir), **settings}
        _searcher(nodes.address, lake_dir, ids["b"], env, log_dir / "cluster-searchers.log")
        api = Server(lake_dir, log_dir / "cluster-api.log", args=("--ray-address", nodes.address, "--no-ingest"),
                     env=settings)
        api.start()
        shown = record_ids_of(lake_dir)
        engines["http"] = HttpEngine(embedded.url, embedded.token or "", shown)
        for count, other in ((1, None), (2, "c")):
            if other is not None:
                _searcher(nodes.address, lake_dir, ids[other], env, log_dir / "cluster-searchers.log")
                time.sleep(DIRECTORY_REFRESH + 1)
            name = f"cluster-{count}"
            engines[name] = HttpEngine(api.url, embedded.token or "", shown)  # one token, any node (shared database)
            echo(f"  cluster: {count} searcher(s): warm-up and {reps} rounds")
            pair = {"http": engines["http"], name: engines[name]}
            timed_round(pair, record=False)  # warm-up: the new searcher opens its splits
            for _ in range(reps):
                timed_round(pair, record=True)
            if load_seconds > 0:
                if count == 1:
                    echo(f"  cluster: load, embedded ({clients} clients, {load_seconds:g}s, searches only)")
                    out["load"]["embedded"] = run_load(embedded.url, embedded.token or "", None, clients=clients,
                                                       seconds=load_seconds)
                echo(f"  cluster: load, {count} searcher(s) ({clients} clients, {load_seconds:g}s, searches only)")
                out["load"][name] = run_load(api.url, embedded.token or "", None, clients=clients,
                                             seconds=load_seconds)
        for (cname, name), s in samples.items():
            out["queries"][cname][name] = {**stats(s), "samples": s}
        for qc in classes:
            ans = agreement.answers.get(qc.name, {}).get("http")
            if ans is not None:
                out["queries"][qc.name]["total"] = ans.total
    finally:
        for engine in engines.values():
            engine.close()
        if api is not None:
            api.stop()
        nodes.stop()  # every Ray process: head, raylets, workers, searcher actors
        embedded.stop()
    out["load_average_at_end"] = os.getloadavg()[0]
    out["agreement"] = {"checks": agreement.checks, "mismatches": agreement.mismatches, "ok": agreement.ok}
    failures = []
    if not agreement.ok:
        failures.append(f"cluster mode: {len(agreement.mismatches)} disagreements with embedded mode")
    for name, ld in out["load"].items():
        if ld["errors"]:
            failures.append(f"cluster load ({name}): {ld['errors']} errors: {ld['error_samples'][:3]}")
    out["failures"] = failures
    out["seconds"] = time.perf_counter() - started
    return out


def overhead(cluster: float | None, embedded: float | None) -> str:
    from seclake.bench.report import ratio

    if cluster is None or embedded is None:
        return "–"
    return f"{(cluster - embedded) * 1000:+.1f} ms ({ratio(cluster, embedded)})"


def section(c: dict[str, Any] | None) -> list[str]:
    """The "Cluster mode" section of docs/benchmarks.md (no lines when the stage did not run)."""
    if not c:
        return []
    from seclake.bench.report import ms

    lines = ["## Cluster mode beside embedded mode", ""]
    add = lines.append
    if c.get("skipped"):
        add(f"Not run: {c['skipped']}.")
        add("")
        return lines
    add(f"The same lake (the 1x lake, with the load test's import) served at once by an embedded `seclake serve` "
        f"and by a read-only cluster API node (`seclake serve --ray-address ... --no-ingest`, same data dir and "
        f"database) whose searches fan out to searcher actors (`seclake searcher`, one per Ray worker node). "
        f"Ray head, worker nodes, searchers and both API nodes are separate processes **on this one "
        f"{c['cpus']}-core machine**: a second searcher adds concurrency and a second split cache, not CPU, so "
        f"the figures show the cost of the fan-out and what concurrency gains here, not what a second machine "
        f"would give. Warm medians over HTTP of {c['reps']} rounds, embedded and cluster requests interleaved; "
        f"a class's splits are the leaves its searches fan out to (one Ray call per searcher carrying its splits, "
        f"plus one fetch call per searcher holding a returned hit; summaries are read from the database by the "
        f"API node, no fan-out).")
    if "load_average_at_start" in c:
        add("")
        add(f"Machine load average (1 min) at the start of this stage: {c['load_average_at_start']:.1f}, at its end: "
            f"{c['load_average_at_end']:.1f} (2 would mean both cores busy before the benchmark added anything).")
    add("")
    add("| class | total | splits | embedded HTTP ms | cluster, 1 searcher ms | overhead | cluster, 2 searchers ms "
        "| overhead |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|")
    for cname, q in c["queries"].items():
        emb = q.get("http", {}).get("median")
        one = q.get("cluster-1", {}).get("median")
        two = q.get("cluster-2", {}).get("median")
        total = q.get("total")
        splits = c.get("splits", {}).get(cname)
        add(f"| {cname} | {'–' if total is None else f'{total:,}'} | {'–' if splits is None else splits} | "
            f"{ms(emb)} | {ms(one)} | {overhead(one, emb)} | {ms(two)} | {overhead(two, emb)} |")
    add("")
    agree = c["agreement"]
    add("Answers (counts, top ids at each offset, facet and histogram buckets) checked against the embedded node's: "
        + (f"**{agree['checks']} checks, all agree**." if agree["ok"] else
           f"**{len(agree['mismatches'])} DISAGREEMENTS** in {agree['checks']} checks: "
           + "; ".join(agree["mismatches"][:5])))
    add("")
    if c["load"]:
        add("Throughput against searcher count: the load test's concurrent mixed searches, **without an import "
            "running** (the read-only node does not ingest), the embedded node loaded the same way as the baseline.")
        add("")
        add("| serving | clients | seconds | requests | throughput (req/s) | p50 ms | p99 ms | errors |")
        add("|---|---:|---:|---:|---:|---:|---:|---:|")
        titles = {"embedded": "embedded", "cluster-1": "cluster, 1 searcher", "cluster-2": "cluster, 2 searchers"}
        for name, ld in c["load"].items():
            add(f"| {titles.get(name, name)} | {ld['clients']} | {ld['elapsed_seconds']:.1f} | {ld['requests']:,} | "
                f"{ld['throughput_per_second']:,.1f} | {ms(ld['p50_seconds'])} | {ms(ld['p99_seconds'])} | "
                f"{ld['errors']} |")
        add("")
    return lines
