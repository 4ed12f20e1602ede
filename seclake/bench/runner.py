"""The whole benchmark, stage by stage: data, ingest, engines, cold and warm runs, agreement, scale, load.

``run(BenchOptions(...))`` returns the results dict (also written as JSON,
and as tables in docs/benchmarks.md) and raises ``BenchFailed`` after
writing them when the engines disagree or the load test had errors.
"""

from __future__ import annotations

import compileall
import json
import os
import platform
import shutil
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seclake.bench import data as bench_data
from seclake.bench import sigma as bench_sigma
from seclake.bench.agree import Agreement
from seclake.bench.classes import CLASSES, QueryClass
from seclake.bench.cpu import loop_seconds
from seclake.bench.ingest import cli_against_http, du_bytes, http_ingest, scaling_ingest, wait_quiet
from seclake.bench.rawingest import raw_ingest
from seclake.cli.collector import quiet_collector

# Back-to-back pairs (HTTP bundle, then the same bundle in the engine layer) per class, in
# rounds over the classes: a burst of the shared machine's other work then lands on a few
# pairs of every class, not on all twenty of one (a class's twenty pairs took 50 ms).
WIRE_PAIRS = 40


def _turns(names: list[str], round_no: int) -> list[str]:
    """A class's engines in the order of one round of the warm runs: each engine goes first
    in turn. The first runs after the previous class's last engine (DuckDB or SQLite, which
    sweep the CPU caches) and pays for it; the next ones find the same split files warm.
    Measured on a 2M-event lake, in one process alone (the engine layer, Q7): 17.1 ms back to
    back, 20.8 ms after a 0.2 s pause; with HTTP always first, Q7 over HTTP took 1.27x the
    engine layer in the rounds and 1.03x back to back (e8dfcaa's committed run)."""
    k = round_no % len(names) if names else 0
    return names[k:] + names[:k]


class BenchFailed(RuntimeError):
    """The engines disagreed, or the load test had errors: the figures are not to be trusted."""


@dataclass
class BenchOptions:
    events: int = 2_000_000
    days: int = 30
    scales: tuple[int, ...] = (1,)
    reps: int = 5
    reps_scaled: int = 3
    load_seconds: float = 60.0
    clients: int = 16
    # Searches arriving at a fixed rate, idle and during a full-speed import (bench/arrivals.py): each phase's
    # length (0: skip) and the arrival rate.
    arrival_seconds: float = 30.0
    arrival_rate: float = 4.0
    ingest_clients: int = 3
    out: Path = Path("docs/benchmarks.md")
    results: Path | None = None  # default: bench-results/<name>.json
    data_dir: Path = Path("bench-data")
    name: str | None = None
    cli_ingest: bool = True
    cli_events: int | None = 200_000  # lines of the CLI ingest sample (None: all)
    # Lines of each run of the 1-core / 2-core HTTP ingest comparison (``ingest.CORE_TURNS``, then
    # one with parse workers; None: skip).
    scaling_events: int | None = 100_000
    peers: bool = True
    keep_data: bool = False
    cluster: bool = False  # also serve the 1x lake in cluster mode (seclake/bench/cluster.py; needs Ray)
    # The code the 1x lake is also served by, side by side (bench/baseline.py): a commit,
    # "committed" (the commit of the committed figures of this run's name), or None.
    baseline: str | None = "committed"
    parse_lines: int = 10_000  # lines per format of the parse-rate stage (0: skip it)
    # SigmaHQ's rules beside the starter pack (bench/sigma.py): where the archive is (a directory holding
    # sigmahq-*.tar.gz, or the archive; None skips the stage), which of its folders or files
    # (globs), the lines of the sample (None: all) and the order of the runs.
    sigma: str | None = str(bench_sigma.SHARED)
    sigma_rules: tuple[str, ...] = bench_sigma.RULES
    sigma_events: int | None = 200_000
    sigma_turns: tuple[str, ...] = bench_sigma.TURNS
    # Piped queries (ds/query) against DuckDB on the same records (bench/analytics.py); needs the peers.
    analytics: bool = True
    # Back-to-back pairs per class: HTTP against the engine layer, and this code against the baseline's
    # (fewer only in the tests' tiny runs: the pairs' medians need 40 to hold still on this machine).
    pairs: int = WIRE_PAIRS
    # Each class's first run after its engine reopened (a server restart per class): True for every
    # class, or the names of the classes to run cold (fewer or none only where a test looks at other stages).
    cold: bool | tuple[str, ...] = True
    classes: tuple[str, ...] = field(default_factory=lambda: tuple(c.name for c in CLASSES))

    def run_name(self) -> str:
        if self.name:
            return self.name
        return f"{human(self.events)}-{'-'.join(f'{s}x' for s in self.scales)}"


def human(n: int) -> str:
    if n >= 1_000_000 and n % 100_000 == 0:
        return f"{n / 1_000_000:g}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def stats(samples: list[float]) -> dict[str, Any]:
    s = sorted(samples)
    if not s:
        return {"n": 0}
    p95 = s[min(len(s) - 1, max(0, -(-95 * len(s) // 100) - 1))]  # nearest rank
    return {"n": len(s), "median": statistics.median(s), "p95": p95, "min": s[0], "max": s[-1]}


class Log:
    def __init__(self, echo: Callable[[str], None]):
        self.echo = echo
        self.stages: dict[str, float] = {}
        self.started = time.perf_counter()

    def stage(self, name: str):
        log = self

        class _Stage:
            def __enter__(self):
                self.t = time.perf_counter()
                log.echo(f"[{time.perf_counter() - log.started:7.1f}s] {name} ...")

            def __exit__(self, *exc):
                dt = time.perf_counter() - self.t
                log.stages[name] = log.stages.get(name, 0.0) + dt
                log.echo(f"[{time.perf_counter() - log.started:7.1f}s] {name}: {dt:.1f}s")

        return _Stage()


def _timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def _compile_modules() -> None:
    """Compile seclake's modules, as installing a package does (pip compiles
    a package's modules when it installs it), so every process the
    benchmark times loads them compiled. An editable install never compiles
    them, and where PYTHONDONTWRITEBYTECODE is set (this machine's shells)
    nothing is cached: every import command and worker process compiled
    every module it imported, ~0.12 s of each command's start."""
    compileall.compile_dir(str(Path(__file__).resolve().parents[1]), quiet=1)


def run(opts: BenchOptions, echo: Callable[[str], None] = print) -> dict[str, Any]:
    from seclake.bench import report
    from seclake.bench.engines import EngineLayer, HttpEngine, requests_of
    from seclake.bench.load import run_load
    from seclake.bench.raw import RawEngine, split_dirs
    from seclake.bench.server import Server

    log = Log(echo)
    _compile_modules()
    classes = [c for c in CLASSES if c.name in opts.classes]
    root = opts.data_dir / opts.run_name()
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "name": opts.run_name(),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items()},
        "machine": {"cpus": _cpus(), "python": platform.python_version(), "platform": platform.platform(),
                    "loop_seconds": loop_seconds()},
        "code": _code(),
        "classes": {c.name: {"title": c.title, "lucene": c.lucene, "days": c.days, "kind": c.kind,
                             "needle": c.needle, "engines": list(c.engines), "requests": len(requests_of(c))}
                    for c in classes},
        "stages": log.stages,
        "scales": {},
    }
    agreement = Agreement()
    failures: list[str] = []
    tree = _baseline(opts, root, results, log) if 1 in opts.scales else None

    if opts.parse_lines:
        from seclake.bench.parsing import STAGE, parse_rates

        with log.stage(STAGE):
            results["parsing"] = parse_rates(opts.parse_lines)

    for scale in opts.scales:
        events = opts.events * scale
        full = scale == 1
        reps = opts.reps if full else opts.reps_scaled
        sr: dict[str, Any] = {"events": events, "reps": reps}
        results["scales"][str(scale)] = sr
        sdir = root / f"{scale}x"
        if sdir.exists():
            shutil.rmtree(sdir)
        sdir.mkdir(parents=True)

        with log.stage(f"{scale}x: generate data"):
            data = bench_data.write_batches(sdir / "batches", events=events, days=opts.days)
        sr["data"] = data.to_json()

        if full and opts.cli_ingest:
            with log.stage(f"{scale}x: ingest with seclake import (CLI) and over HTTP, the same sample, in turns"):
                sr["ingest_cli"], sr["ingest_http_sample"] = cli_against_http(
                    data, sdir / "cli-against-http", sdir / "cli.log", opts.cli_events, clients=opts.ingest_clients)
        if full:
            with log.stage(f"{scale}x: ingest floor: the same records into tantivy alone"):
                sr["ingest_raw"] = raw_ingest(data, sdir / "raw-index", opts.cli_events)
            if opts.sigma:
                sr["ingest_sigma"] = bench_sigma.stage(opts, data, sdir, log)
            if opts.scaling_events and (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
                with log.stage(f"{scale}x: ingest over HTTP on 1 core and on 2, in turns"):
                    sr["ingest_scaling"] = scaling_ingest(data, sdir / "scaling", opts.scaling_events,
                                                          clients=opts.ingest_clients)

        server = Server(sdir / "lake", sdir / "server.log")
        with log.stage(f"{scale}x: start server"):
            server.start()
        try:
            with log.stage(f"{scale}x: ingest over HTTP"):
                sr["ingest_http"] = http_ingest(server, data, clients=opts.ingest_clients)
            with log.stage(f"{scale}x: wait for merges to settle"):
                sr["settle_seconds"] = wait_quiet(server.data_dir)
            lake_bytes = du_bytes(server.data_dir / "lake")
            sr["ingest_http"].update(lake_bytes=lake_bytes, bytes_per_event=lake_bytes / data.lines,
                                     server_peak_rss_kb_after_settle=server.peak_rss_kb(),
                                     server_rss_kb_serving=server.rss_kb(),
                                     # Anonymous memory against mapped files (split indexes are mmapped).
                                     server_rss_anon_kb_serving=server.status_kb("RssAnon"),
                                     server_rss_file_kb_serving=server.status_kb("RssFile"))
            peak_rss = [server.peak_rss_kb() or 0]
            # Peaks of a server that only serves: restarted after the ingest
            # (the cold runs restart it), then queried. VmHWM restarts with it.
            serving_peaks: list[int] = []
            restarted = False

            engines: dict[str, Any] = {}
            peer_names: list[str] = []
            with log.stage(f"{scale}x: open engines"):
                engines["engine"] = EngineLayer(server.data_dir)
                engines["http"] = HttpEngine(server.url, server.token or "", engines["engine"].services.record_ids)
                live = split_dirs(server.data_dir, engines["engine"].services.db)
                engines["raw"] = RawEngine(live)
            # The lake at rest: the published splits only (a merge's sources
            # are deleted after a grace period, and the log keeps its live
            # segment), against the raw log lines they hold.
            split_bytes = sum(du_bytes(p) for p in live)
            sr["ingest_http"].update(split_bytes=split_bytes, split_bytes_per_event=split_bytes / data.lines,
                                     raw_bytes_per_event=data.bytes / data.lines,
                                     splits_over_raw=split_bytes / data.bytes if data.bytes else None)
            if full and opts.peers:
                from seclake.bench.peers import DuckPeer, SqlitePeer, export_rows

                with log.stage(f"{scale}x: load peers (DuckDB, SQLite FTS5)"):
                    csv_path = sdir / "events.csv"
                    t_export, rows = _timed(export_rows, engines["engine"].view, csv_path)
                    # Side by side: SQLite's load is one thread, DuckDB's mostly its own threads.
                    with ThreadPoolExecutor(2) as loaders:
                        duck = loaders.submit(DuckPeer.load, csv_path, sdir / "peer.duckdb")
                        lite = loaders.submit(SqlitePeer.load, csv_path, sdir / "peer.sqlite")
                        t_duck, t_lite = duck.result(), lite.result()
                    if opts.analytics:
                        from seclake.bench.analytics import load as load_analytics

                        t_an = load_analytics(csv_path, sdir / "analytics.duckdb")
                    csv_path.unlink()
                    engines["duckdb"] = DuckPeer(sdir / "peer.duckdb")
                    engines["sqlite"] = SqlitePeer(sdir / "peer.sqlite")
                    peer_names = ["duckdb", "sqlite"]
                sr["peers"] = {"rows": rows, "export_seconds": t_export, "duckdb_load_seconds": t_duck,
                               "sqlite_load_seconds": t_lite,
                               "duckdb_bytes": (sdir / "peer.duckdb").stat().st_size,
                               "sqlite_bytes": (sdir / "peer.sqlite").stat().st_size}
                if opts.analytics:
                    sr["peers"]["analytics_load_seconds"] = t_an
            active = ["http", "engine", "raw", *peer_names]
            timings: dict[str, dict[str, dict[str, Any]]] = {c.name: {} for c in classes}

            def check(qc: QueryClass, engine: str, answer) -> None:
                if full:
                    agreement.add(qc.name, engine, answer)
                else:  # the 10x data is other data: engines agree with each other there
                    agreement.add(f"{qc.name}@{scale}x", engine, answer)

            # The engines in this process collect garbage as the server does
            # (``seclake serve``: young collections after 100,000 objects, what
            # exists now frozen out of the passes). With Python's defaults a
            # search's objects were promoted mid-search and a full collection
            # (32-45 ms over an engine layer on a 2M-event lake, ~120 with the
            # peers' 3M objects) followed every ~10 searches: 45-80 ms stalls
            # on the engine layer's and raw tantivy's runs the server never had.
            quiet_collector()
            # Cold: the first run of a class right after its engine opened the data (OS page cache not dropped).
            with log.stage(f"{scale}x: cold runs"):
                for qc in [c for c in classes if opts.cold is True or (opts.cold and c.name in opts.cold)]:
                    for name in [e for e in qc.engines if e in active]:
                        if name == "http":
                            peak_rss.append(server.peak_rss_kb() or 0)
                            if restarted:
                                serving_peaks.append(server.peak_rss_kb() or 0)
                            server.restart()
                            restarted = True
                            engines["http"].reopen(server.url, server.token or "")
                        elif name == "engine":
                            engines["engine"].close()
                            engines["engine"] = EngineLayer(server.data_dir)
                        elif name == "raw":
                            engines["raw"].close()
                            engines["raw"] = RawEngine(split_dirs(server.data_dir, engines["engine"].services.db))
                        else:
                            engines[name].reopen()
                        dt, answer = _timed(engines[name].run, qc)
                        timings[qc.name].setdefault(name, {})["cold"] = dt
                        check(qc, name, answer)
            with log.stage(f"{scale}x: warm-up round"):
                for qc in classes:
                    for name in [e for e in qc.engines if e in active]:
                        check(qc, name, engines[name].run(qc))
            with log.stage(f"{scale}x: warm runs ({reps} rounds, engines interleaved)"):
                samples: dict[tuple[str, str], list[float]] = {}
                for r in range(reps):
                    for qc in classes:
                        for name in _turns([e for e in qc.engines if e in active], r):
                            dt, answer = _timed(engines[name].run, qc)
                            samples.setdefault((qc.name, name), []).append(dt)
                            check(qc, name, answer)
                for (cname, name), s in samples.items():
                    timings[cname].setdefault(name, {}).update(stats(s))
                    timings[cname][name]["samples"] = s
                for qc in classes:
                    ans = agreement.answers.get(qc.name if full else f"{qc.name}@{scale}x", {}).get("http")
                    if ans is not None:
                        timings[qc.name]["total"] = ans.total
            # The layer's own cost, without the machine's: in the rounds above
            # the server sits idle while the other engines run (DuckDB for a
            # second), and a request after an idle moment pays for waking the
            # server (a bare uvicorn application: 0.3 ms after 200 ms idle,
            # 0.04 ms back to back), which the engine layer, in this busy
            # process, never does. Here each HTTP bundle is paired at once
            # with the same bundle in the engine layer, and the median of the
            # pairs' differences is kept. The pair's order alternates: the
            # second of a pair finds the CPU caches warm from the same query
            # (a 2M-event lake, 40 pairs, HTTP always first: HIST 1.43-1.54 ms
            # per request over the engine layer, Q2 1.31-1.35; alternating:
            # 0.84-0.88 and 0.90-0.94).
            with log.stage(f"{scale}x: HTTP against the engine layer, {opts.pairs} pairs per class back to back"):
                paired = [qc for qc in classes if {"http", "engine"} <= set(qc.engines)]
                diffs: dict[str, list[float]] = {qc.name: [] for qc in paired}
                for i in range(opts.pairs):
                    for qc in paired:
                        took = {}
                        for name in _turns(["http", "engine"], i):
                            took[name], answer = _timed(engines[name].run, qc)
                            check(qc, name, answer)
                        diffs[qc.name].append(took["http"] - took["engine"])
                for name, d in diffs.items():
                    timings[name]["wire_pairs"] = {"n": len(d), "median": statistics.median(d)}
            sr["queries"] = timings
            peak_rss.append(server.peak_rss_kb() or 0)
            if restarted:
                serving_peaks.append(server.peak_rss_kb() or 0)
                sr["server_peak_rss_kb_serving"] = max(serving_peaks)
                sr["server_rss_anon_kb_after_queries"] = server.status_kb("RssAnon")
                sr["server_rss_file_kb_after_queries"] = server.status_kb("RssFile")

            if full and opts.analytics and peer_names:
                from seclake.bench.analytics import DuckAnalytics, run_stage

                peak_rss.append(server.peak_rss_kb() or 0)  # the stage restarts the server (its peak with it)
                with log.stage(f"{scale}x: analytics (ds/query) against DuckDB, {reps} rounds in turns"):
                    duck_an = DuckAnalytics(sdir / "analytics.duckdb")
                    try:
                        sr["analytics"] = run_stage(server, engines["http"], duck_an, reps=reps)
                    finally:
                        duck_an.close()
                peak_rss.append(server.peak_rss_kb() or 0)
                if not sr["analytics"]["ok"]:
                    failures.append(f"analytics: ds/query and DuckDB disagree: {sr['analytics']['mismatches'][:3]}")

            if full and tree is not None:
                from seclake.bench.baseline import BaselineUnavailable, side_by_side

                peak_rss.append(server.peak_rss_kb() or 0)  # the server restarts (its peak with it)
                with log.stage(f"{scale}x: HTTP side by side with {tree.commit[:12]}, {opts.pairs} pairs per class"):
                    try:
                        sr["baseline"] = side_by_side(server, engines["http"], tree, sdir, classes, pairs=opts.pairs)
                    except BaselineUnavailable as e:
                        sr["baseline"] = {**tree.to_json(), "skipped": str(e)}

            if full and opts.load_seconds > 0:
                rate = sr["ingest_http"]["events_per_second"] or 5000
                load_lines = int(min(max(rate * opts.load_seconds * 1.5, 20_000), opts.events * 2))
                with log.stage(f"{scale}x: generate load-test import data"):
                    load_data = bench_data.write_batches(sdir / "load-batches", events=load_lines, days=opts.days,
                                                         seed=bench_data.SEED + 1)
                with log.stage(f"{scale}x: load test ({opts.clients} clients, {opts.load_seconds:g}s, import running)"):
                    sr["load"] = run_load(server.url, server.token or "", load_data, clients=opts.clients,
                                          seconds=opts.load_seconds)
                peak_rss.append(server.peak_rss_kb() or 0)
                if sr["load"]["errors"] or sr["load"]["import"]["errors"]:
                    failures.append(f"load test: {sr['load']['errors']} search errors, "
                                    f"{sr['load']['import']['errors']} import errors: "
                                    f"{(sr['load']['error_samples'] + sr['load']['import']['error_samples'])[:3]}")
            if full and opts.arrival_seconds > 0:
                from seclake.bench.arrivals import run_arrivals

                rate = sr["ingest_http"]["events_per_second"] or 5000
                lines = int(min(max(rate * opts.arrival_seconds * 1.5, 20_000), opts.events))
                with log.stage(f"{scale}x: generate search-under-ingest import data"):
                    arrival_data = bench_data.write_batches(sdir / "arrival-batches", events=lines, days=opts.days,
                                                            seed=bench_data.SEED + 2)
                with log.stage(f"{scale}x: searches arriving at {opts.arrival_rate:g}/s, idle then during an import "
                               f"({opts.arrival_seconds:g}s a phase)"):
                    assert server.proc is not None
                    sr["arrivals"] = run_arrivals(server.url, server.token or "", server.proc.pid, arrival_data,
                                                  rate=opts.arrival_rate, seconds=opts.arrival_seconds)
                peak_rss.append(server.peak_rss_kb() or 0)
                a = sr["arrivals"]
                bad = a["idle"]["errors"] + a["during_import"]["errors"] + a["import_alone"]["errors"] + \
                    a["import_during_searches"]["errors"]
                if bad:
                    failures.append(f"search-under-ingest test: {bad} errors: "
                                    f"{(a['idle']['error_samples'] + a['during_import']['error_samples'])[:3]}")
            sr["server_peak_rss_kb"] = max(peak_rss)
            for e in engines.values():
                e.close()
        finally:
            server.stop()
        if not opts.keep_data:
            shutil.rmtree(sdir / "batches", ignore_errors=True)
            shutil.rmtree(sdir / "load-batches", ignore_errors=True)
            shutil.rmtree(sdir / "arrival-batches", ignore_errors=True)

    if tree is not None and not opts.keep_data:
        shutil.rmtree(tree.path, ignore_errors=True)

    if opts.cluster and 1 in opts.scales:
        from seclake.bench.cluster import available, run_cluster

        why = available()
        with log.stage("cluster mode beside embedded, on the 1x lake"):  # no "1x: " prefix: left out of the estimate of the default run
            results["cluster"] = {"skipped": why} if why else run_cluster(
                root / "1x" / "lake", root / "1x", classes, reps=opts.reps, load_seconds=opts.load_seconds,
                clients=opts.clients, echo=echo)
        failures += results["cluster"].get("failures", [])
    results["agreement"] = {"checks": agreement.checks, "mismatches": agreement.mismatches, "ok": agreement.ok}
    if not agreement.ok:
        failures.append(f"{len(agreement.mismatches)} disagreements between engines")
    results["failures"] = failures
    results["stages"] = dict(log.stages)
    results["seconds"] = time.perf_counter() - log.started
    results["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    results_path = opts.results or Path("bench-results") / f"{opts.run_name()}.json"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(report.markdown(results, results_path))
    echo(f"wrote {opts.out} and {results_path} in {results['seconds']:.0f}s")
    if failures:
        for line in agreement.mismatches[:50]:
            echo("MISMATCH " + line)
        raise BenchFailed("; ".join(failures))
    return results


def _baseline(opts: BenchOptions, root: Path, results: dict[str, Any], log: Log):
    """The baseline's code, extracted and built, or None (why: ``results["baseline"]``)."""
    from seclake.bench.baseline import BaselineUnavailable, committed_commit, extract

    ref = opts.baseline
    if ref == "committed":
        ref = committed_commit(opts.run_name())
        if ref is None:
            results["baseline"] = {"skipped": f"no committed figures named {opts.run_name()} (bench-results/)"}
            return None
    if not ref:
        return None
    with log.stage(f"extract and build the baseline {ref[:12]}"):
        try:
            tree = extract(ref, root / "baseline-code")
        except (BaselineUnavailable, OSError) as e:
            results["baseline"] = {"skipped": f"{ref}: {e}"}
            return None
    results["baseline"] = {**tree.to_json(), "named": opts.baseline}
    return tree


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)


def _code() -> dict[str, Any]:
    """The commit of the seclake being measured, and whether its tree had uncommitted changes."""
    import subprocess

    import seclake

    where = Path(seclake.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--", "seclake"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    from seclake import native
    from seclake.storage import allocator

    return {"path": str(where), "commit": commit or None, "dirty": None if dirty is None else bool(dirty),
            # Which of the modules setup.py compiles ran compiled: an install without
            # a C compiler measures the interpreted path (~1.2x slower to ingest).
            "native": {"compiled": len(native.compiled()), "modules": len(native.MODULES)},
            # The C allocator of the processes this one starts (split builders, the floor): storage/allocator.py.
            "allocator": "jemalloc" if allocator.preloaded() else "system"}
