"""What a monitoring system scrapes from ``GET /metrics`` (Prometheus text format).

Counters and histograms are moved by the code doing the work (the
dispatcher, the import call, the detector); figures that already exist
somewhere (the log, the lake, the detector's progress) are read when a
scrape comes, by ``LakeCollector``, so nothing is counted twice.

Each ``Services`` has its own registry: tests run several servers in one
process, and prometheus-client's default registry is process-wide.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

log = logging.getLogger("seclake.metrics")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Request latency buckets (seconds): a search takes milliseconds, an import of
# a large file or a cold search over months seconds.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # Resident memory, CPU seconds, open files: prometheus-client's own (Linux /proc).
        ProcessCollector(registry=self.registry)
        self.requests = Counter(
            "seclake_requests", "API calls answered, by call and outcome (OK, ERROR, EXCEPTION).",
            ("call", "outcome"), registry=self.registry,
        )
        self.latency = Histogram(
            "seclake_request_duration_seconds", "Time from request to answer, by call.",
            ("call",), buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.records = Counter(
            "seclake_records", "Records received, by path (import), dataset and outcome "
            "(accepted: parsed; raw: kept unparsed; rejected: refused by the reader; truncated: cut to size).",
            ("path", "dataset", "outcome"), registry=self.registry,
        )
        self.refused = Counter(
            "seclake_imports_refused", "Imports refused whole (nothing stored), by path and reason.",
            ("path", "reason"), registry=self.registry,
        )
        self.lockouts = Counter(
            "seclake_login_lockouts", "Login lockouts started, by scope: user (a username from one address, "
            "login_max_failures) or address (every username from one address, login_address_max_failures).",
            ("scope",), registry=self.registry,
        )
        self.locked_out = Counter(
            "seclake_logins_locked_out", "Login attempts refused during a lockout (429), by scope (user, address).",
            ("scope",), registry=self.registry,
        )
        self.cluster_calls = Counter(
            "seclake_cluster_calls", "Cluster mode: calls to searchers (one per searcher and attempt), by phase.",
            ("phase",), registry=self.registry,
        )
        self.cluster_retried = Counter(
            "seclake_cluster_retried_splits", "Cluster mode: splits asked again of another searcher after a failure "
            "or the first deadline, by phase.", ("phase",), registry=self.registry,
        )
        self.cluster_failed = Counter(
            "seclake_cluster_failed_splits", "Cluster mode: splits no searcher answered (named in the reply's _shards; a "
            "piped query's STATS folded on the searchers fails instead).",
            ("phase",), registry=self.registry,
        )
        self.oidc_signins = Counter(
            "seclake_oidc_signins", "Sign-ins with an identity provider (OpenID Connect), by provider and outcome "
            "(ok, or why refused: state, expired, signature, claims, unreachable, not_provisioned...).",
            ("provider", "outcome"), registry=self.registry,
        )
        self.behaviors = Counter(
            "seclake_behaviors", "Behaviors made by the detector, by rule.", ("rule",), registry=self.registry,
        )
        self.analytics_queries = Counter(
            "seclake_analytics_queries", "Analytics queries (ds/query, tasks), by mode (call, task) and outcome "
            "(done; refused: a limit; timeout; cancelled; failed).", ("mode", "outcome"), registry=self.registry,
        )
        self.analytics_records = Counter(
            "seclake_analytics_records_read", "Records analytics queries read (every record their search matched).",
            registry=self.registry,
        )
        self.analytics_paths = Counter(
            "seclake_analytics_paths", "Analytics queries by the path that read them (columnar: the splits' columns; "
            "rows: record by record).", ("path",), registry=self.registry,
        )
        self.analytics_columns = Counter(
            "seclake_analytics_columns_computed", "Columns of splits computed for analytics queries (a split's first "
            "query reading a field; then kept beside the split).", registry=self.registry,
        )

    def request(self, call: str, outcome: str, seconds: float) -> None:
        self.requests.labels(call, outcome).inc()
        self.latency.labels(call).observe(seconds)

    def imported(self, path: str, dataset: str, report: dict[str, Any]) -> None:
        for outcome in ("accepted", "raw", "rejected", "truncated"):
            n = report.get(outcome) or 0
            if n:
                self.records.labels(path, dataset, outcome).inc(n)

    def cluster(self, phase: str, calls: int, retried: int, failed: int) -> None:
        self.cluster_calls.labels(phase).inc(calls)
        if retried:
            self.cluster_retried.labels(phase).inc(retried)
        if failed:
            self.cluster_failed.labels(phase).inc(failed)

    def watch(self, collector: Collector) -> None:
        self.registry.register(collector)

    def text(self) -> bytes:
        return generate_latest(self.registry)


class LakeCollector(Collector):
    """Figures read at scrape time from the node's lake, log and detector."""

    def __init__(self, lake: Any, detector: Any, ready: Callable[[], bool], parsers: Any = None):
        self.lake = lake
        self.detector = detector
        self.ready = ready
        self.parsers = parsers

    def describe(self) -> list:
        # Collected on demand only: describing would read the lake at registration.
        return []

    def collect(self) -> Iterator[Any]:
        ready = GaugeMetricFamily("seclake_ready", "1 when this node serves complete answers (GET /readyz).")
        ready.add_metric([], 1 if self.ready() else 0)
        yield ready
        stats = self.lake.stats()
        splits = GaugeMetricFamily("seclake_splits", "Published splits, by dataset.", labels=["dataset"])
        records = GaugeMetricFamily("seclake_lake_records", "Records in published splits, by dataset.", labels=["dataset"])
        size = GaugeMetricFamily("seclake_lake_bytes", "Bytes of published splits on disk, by dataset.", labels=["dataset"])
        for dataset, d in sorted(stats.get("datasets", {}).items()):
            splits.add_metric([dataset], d["splits"])
            records.add_metric([dataset], d["records"])
            size.add_metric([dataset], d["bytes"])
        yield from (splits, records, size)
        damaged = getattr(self.lake, "damaged", None)
        if damaged is not None:
            yield _gauge("seclake_splits_damaged", "Published splits this node could not read at start: searches "
                         "over their time range name them as failed (see the server log).", len(damaged()))
        wal = getattr(self.lake, "wal", None)
        if wal is None:  # an API node without a lake of its own
            return
        refused = CounterMetricFamily(
            "seclake_split_deletions_refused", "Split directories not deleted since start because the path a "
            "stored name made led out of the lake (a ../ in the catalog, a link): the data dir or its database "
            "was altered (see the server log).")
        refused.add_metric([], self.lake.janitor.refused)
        yield refused
        last = wal.next_seq - 1
        indexed = stats.get("indexed_seq", 0)
        yield _gauge("seclake_log_bytes", "Bytes of write-ahead log segments on disk.", wal.size_bytes())
        yield _gauge("seclake_log_last_sequence", "Sequence of the last record written to the log.", last)
        yield _gauge("seclake_log_lag_records", "Records in the log not yet searchable.", max(0, last - indexed))
        yield _gauge("seclake_index_pending_records", "Records waiting for the indexer.", stats.get("pending", 0))
        yield _gauge("seclake_indexer_busy_ratio", "Share of the last 10 s the indexer spent building splits.",
                     stats.get("busy_share", 0.0))
        yield _gauge("seclake_merges_waiting", "1 while merges other than those bounding a day's split count wait "
                     "for a busy indexer (storage/merger.py).", int(stats.get("merges_waiting", False)))
        yield _gauge("seclake_log_damaged_entries", "Damaged log ranges skipped at the last start (see the log).",
                     len(getattr(wal, "damage", ()) or ()))
        ledger = getattr(wal, "ledger", None)
        if ledger is not None:
            yield _gauge("seclake_log_damage_unacknowledged", "Ranges of acknowledged data the write-ahead log found "
                         "damaged and no operator acknowledged yet (/healthz names them; seclake lake check, "
                         "seclake lake acknowledge-damage).", len(ledger.unacknowledged()))
        if self.detector is not None:
            yield _gauge("seclake_detector_lag_records", "Records in the log the detector has not run the rules on.",
                         max(0, last - self.detector.seq))
            yield _gauge("seclake_detector_windows", "Threshold windows holding entries (one per rule, customer "
                         "and key).", self.detector.live_windows())
            evicted = CounterMetricFamily(
                "seclake_detector_windows_evicted", "Threshold windows dropped since start because more keys than "
                "the bound had live windows (the oldest by their newest entry go first).")
            evicted.add_metric([], self.detector.windows_evicted)
            yield evicted
            dropped = CounterMetricFamily(
                "seclake_detector_history_dropped", "Behavior history entries (keys, and keys with a behavior) "
                "dropped from memory since start, the least recently used first; they stay in the database, "
                "where a behavior of a key not seen lately is looked up.")
            dropped.add_metric([], self.detector.history.dropped)
            yield dropped
            merges = CounterMetricFamily("seclake_merges", "Merges of small splits done since start.")
            merges.add_metric([], getattr(self.lake, "merges_done", 0))
            yield merges
            lost = CounterMetricFamily(
                "seclake_workers_lost", "Split-building and merge worker processes that died under their work "
                "(killed, or out of memory) since start; a build is run again in new ones, a merge at the next round.")
            lost.add_metric([], getattr(self.lake, "workers_lost", 0))
            yield lost
        flusher = getattr(self.lake, "flusher", None)
        if flusher is not None:
            failed = CounterMetricFamily(
                "seclake_split_builds_failed", "Split builds of new records that failed since start (see the server "
                "log): their records are built again in parts, a failure of the machine (no space) tried again later.")
            failed.add_metric([], flusher.builds_failed)
            yield failed
            quarantined = CounterMetricFamily(
                "seclake_records_quarantined", "Records since start the index could not take whole, searchable in "
                "part only (without their number and address columns, or by their words and docId), their "
                "bodies kept whole; the server log names each with the reason.")
            quarantined.add_metric([], flusher.records_quarantined)
            yield quarantined
            holds = CounterMetricFamily(
                "seclake_indexer_spread_holds", "Times since start the indexer held records spread over many days "
                "(an import of past days) for more, so that a flush makes fewer, larger splits (a few seconds "
                "at most: storage/flusher.py).")
            holds.add_metric([], flusher.spread_holds)
            yield holds
        if self.parsers is not None:
            bodies = CounterMetricFamily(
                "seclake_parse_worker_bodies", "Import bodies parsed in parse worker processes since start.")
            bodies.add_metric([], self.parsers.parsed)
            yield bodies
            lost = CounterMetricFamily(
                "seclake_parse_workers_lost", "Parse worker processes that died under an import body (killed, or "
                "out of memory) since start; the body is parsed again in a new one, and refused (503) if that dies too.")
            lost.add_metric([], self.parsers.lost)
            yield lost


class ListenerCollector(Collector):
    """The syslog/NetFlow listeners (service/listeners.py): connections open now and faults, per listener."""

    def __init__(self, listeners: Any):
        self.listeners = listeners

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Any]:
        connections = GaugeMetricFamily("seclake_listener_connections", "TCP/TLS connections a listener holds open "
                                        "now.", labels=["listener"])
        faults = CounterMetricFamily(
            "seclake_listener_faults", "Listener faults since start, by listener and kind: connections closed to make "
            "room (evicted_per_address, evicted_listener_full), closed for no complete frame in time "
            "(first_frame_timeouts, idle_timeouts), bad_frames, tls_handshake_failures... (docs/receivers.md).",
            labels=["listener", "kind"])
        for spec, open_now, counts in self.listeners.counts():
            if open_now is not None:
                connections.add_metric([spec.name], open_now)
            for kind, n in sorted(counts.items()):
                faults.add_metric([spec.name, kind], n)
        yield connections
        yield faults


class ClusterCollector(Collector):
    """Cluster API nodes: the searchers and indexers the node can reach now."""

    def __init__(self, searchers: Any, indexers: Any = None):
        self.searchers = searchers
        self.indexers = indexers

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Any]:
        for name, directory in (("searchers", self.searchers), ("indexers", self.indexers)):
            if directory is None:
                continue
            try:
                n = len(directory.live())
            except Exception:  # noqa: BLE001 - Ray unreachable: none reachable
                log.warning("metrics: cannot list the cluster's %s", name, exc_info=True)
                n = 0
            yield _gauge(f"seclake_cluster_{name}", f"Cluster mode: {name} this node reaches (listed every 2 s).", n)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    g = GaugeMetricFamily(name, doc)
    g.add_metric([], value)
    return g
