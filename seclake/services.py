"""Everything the service is made of, built from one settings object.

The HTTP app and the CLI both build a ``Services``; nothing in it knows about
HTTP. Long-running parts (the lake, the indexer...) are appended to
``components`` and started and stopped with the server.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Protocol

from seclake.db.database import Database
from seclake.db.models import DeploymentKey
from seclake.detect.detector import Detector
from seclake.detect.rulebook import RuleBook
from seclake.detect.summaries import SummaryStore
from seclake.errors import ValidationFailed
from seclake.notify.alerting import Alerting
from seclake.record.identity import RecordIds
from seclake.search.root import InProcessLeaves, Root
from seclake.service.access import Access
from seclake.service.audit import Audit
from seclake.service.authentication import Authentication
from seclake.service.clock import Clock, utc_now
from seclake.service.detection import Detection
from seclake.service.idempotency import Idempotency
from seclake.service.ingestion import Ingestion
from seclake.service.listeners import Listeners, ListenerSpec
from seclake.service.login import Login
from seclake.service.metrics import ClusterCollector, LakeCollector, Metrics
from seclake.service.oidc import Oidc
from seclake.service.parsepool import ParsePool
from seclake.service.querytasks import QueryTasks
from seclake.service.password import PasswordHasher
from seclake.service.policies import Policies
from seclake.service.priority import Priority
from seclake.service.readiness import Readiness
from seclake.service.retention import RetentionSchedule
from seclake.service.sessions import Sessions
from seclake.service.tokens import Tokens
from seclake.service.users import Users
from seclake.settings import Settings
from seclake.storage.catalog import Catalog
from seclake.storage.lake import Lake
from seclake.storage.layout import Layout
from seclake.storage.splitstore import SplitStore, StoreConfig

log = logging.getLogger("seclake")

# A one-shot command that writes the lake (import, demo, backfill) starts
# merging only after it has run this long. A day's merge takes seconds, and
# one still running when the command ends is abandoned (the lake's stop does
# not wait for it): the bench's 17 import commands of 4k-32k lines each
# started 26 merges and finished none, and without them they took 12% less
# time. A long command merges as the server does; the server merges what
# short ones leave behind.
ONE_SHOT_MERGE_AFTER = 30.0


class Component(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


class Services:
    def __init__(self, settings: Settings, clock: Clock = utc_now, *, one_shot: bool = False):
        """``one_shot``: for a command that runs and ends (``cli/options.py``),
        not a server: its lake merges late and opens no split it does not search."""
        self.settings = settings
        self.clock = clock
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.db = Database(settings.effective_database_url)
        self.hasher = PasswordHasher(eager=not one_shot)
        self.users = Users(self.db, self.hasher, settings, clock)
        self.sessions = Sessions(self.db, settings, clock)
        self.tokens = Tokens(self.db, clock)
        self.audit = Audit(self.db, clock)
        # Access control: data policies and custom roles, and the effective
        # rights of a caller, read from the database on every call.
        self.policies = Policies(self.db, settings, clock)
        self.access = Access(self.db)
        self.auth = Authentication(self.sessions, self.tokens, self.access)
        # What operators see: GET /metrics, /healthz, /readyz (api/health.py).
        self.metrics = Metrics()
        # Searches first: bulk imports wait at checkpoints while searches run (service/priority.py).
        self.priority = Priority(settings.ingest_yield_share)
        self.metrics.watch(self.priority)
        self.login = Login(self.db, self.hasher, self.sessions, self.audit, settings, clock, self.metrics)
        # Sign-in with the identity providers of the settings (OpenID Connect): docs/sso.md.
        self.oidc = Oidc(settings, self.users, self.login, self.audit, self.metrics)
        self.components: list[Component] = []
        self.readiness = Readiness(self)
        # Run once every component has started (seclake up loads demo data here).
        self.on_started: list = []
        # The lake: durable appends, background indexing, searches over splits.
        # An API node that does not ingest (cluster mode, docs/deploy-cluster.md)
        # reads the splits other nodes write from the shared catalog instead.
        # Splits on object storage (split_store_url), or None: the shared filesystem.
        store_config = StoreConfig.from_settings(settings)
        self.split_store = SplitStore(store_config) if store_config is not None else None
        if settings.ingest:
            self.lake = Lake(
                settings.data_dir,
                self.db,
                commit_interval=settings.commit_interval_seconds,
                merge_quiet=settings.merge_quiet_seconds,
                store=self.split_store,
                partitions=settings.customer_partitions,
                merge_after=ONE_SHOT_MERGE_AFTER if one_shot else 0.0,
                open_splits=not one_shot,
                build_niceness=settings.build_niceness,
                spread_hold=settings.spread_hold_seconds,
            )
        else:
            from seclake.cluster.catalogview import CatalogView

            self.lake = CatalogView(Catalog(self.db), Layout(settings.data_dir))
        # tantivy releases the GIL while searching: leaves run in parallel threads.
        self.search_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="seclake-leaf")
        self.search = Root(self.lake.splits, self._leaf_executor())
        # Analytics queries submitted as tasks run in a pool of their own (service/querytasks.py).
        self.query_tasks = QueryTasks(
            workers=settings.analytics_task_workers, max_tasks=settings.analytics_max_tasks,
            max_per_user=settings.analytics_max_tasks_per_user, keep_seconds=settings.analytics_task_keep_seconds,
            timeout_seconds=settings.analytics_task_timeout_seconds, max_calls=settings.analytics_max_running_calls,
        )
        # Behavior summaries (daily per key): folded by the detector, triaged and searched by calls.
        self.summaries = SummaryStore(self.db, settings.score_bands)
        # Notifications (docs/alerting.md): decided in the detector's save (an outbox row in its
        # transaction), sent by the server's sender thread, never by a one-shot command.
        self.alerting = Alerting(self.db, settings, self.summaries, self.metrics, send=settings.ingest and not one_shot)
        # Behavior rules, run on every record as it arrives: in the database, shared by
        # every node; <data dir>/rules holds the files of before, imported once.
        self.rules = RuleBook(self.db, legacy_directory=settings.data_dir / "rules", cache_directory=settings.data_dir)
        self.detector = Detector(
            self.rules, self.db, bands=settings.score_bands, summaries=self.summaries, ids=lambda: self.record_ids,
            made=self.metrics.behaviors,
        )
        # Large import bodies, and the files of `seclake import`, are parsed in worker
        # processes (service/parsepool.py), if any; they start at the first body that needs one.
        workers = settings.effective_parse_workers
        self.parsers = ParsePool(workers, partitions=settings.customer_partitions) if workers else None
        self.metrics.watch(LakeCollector(self.lake, self.detector if settings.ingest else None, self.readiness.ready,
                                         self.parsers))
        # Syslog listeners (service/listeners.py): started last, once imports can be stored.
        self.listeners: Listeners | None = None
        if not settings.ingest:
            if settings.ray_address:
                # Cluster mode: imports are parsed here and stored by the ingest node's ingestor.
                from seclake.cluster.remoteingestion import RemoteIngestion

                self.ingestion = RemoteIngestion(settings.ray_namespace, settings.ingest_timeout_seconds,
                                                 parsers=self.parsers)
            else:
                from seclake.cluster.catalogview import NoIngestion

                self.ingestion = NoIngestion()
            return
        # Imports' idempotency keys, decided here where the lake is written.
        self.idempotency = Idempotency(self.db, self.lake, settings.idempotency_key_hours)
        self.ingestion = Ingestion(self.lake, self.detector, self.idempotency, self.parsers, self.priority)
        # Order matters: the detector catches up with the log the lake opened,
        # and the keys the log holds are recorded before any import arrives.
        self.components.append(self.lake)
        self.components.append(Detection(self.detector, self.lake, settings.commit_interval_seconds))
        self.components.append(self.alerting)
        self.components.append(self.idempotency)
        self.components.append(
            RetentionSchedule(
                self.lake, settings.retention_days, settings.retention_interval_minutes, self.idempotency
            )
        )
        if settings.ray_address:
            from seclake.cluster import INDEXER_PREFIX
            from seclake.cluster.indexer import RayIndexers
            from seclake.cluster.placement import ActorDirectory

            # Large batches and merges are built by the cluster's indexer
            # actors when there are any (here otherwise).
            indexers = ActorDirectory(INDEXER_PREFIX, settings.ray_namespace)
            self.lake.builder.indexers = RayIndexers(indexers)
            self.metrics.watch(ClusterCollector(None, indexers))
            # Searchers open their splits before searches ask for them.
            from seclake.cluster.leaves import SearcherDirectory
            from seclake.cluster.warmer import Warmer

            self.components.append(
                Warmer(self.lake.catalog, SearcherDirectory(settings.ray_namespace), days=settings.searcher_warm_days)
            )
            # Last: other API nodes' imports arrive once the log is replayed.
            from seclake.cluster.ingestor import IngestorHost

            self.components.append(IngestorHost(self.ingestion, settings.ray_namespace))

    def listen(self) -> None:
        """Add the syslog/NetFlow listeners of the settings, started last: for
        the server only (api/app.py), so that one-shot commands (seclake import)
        run beside a server never try to bind its ports."""
        if self.settings.listeners and self.listeners is None:
            specs = [ListenerSpec.parse(url) for url in self.settings.listeners]
            self.listeners = Listeners(specs, self.ingestion, self.metrics)
            self.components.append(self.listeners)

    def _leaf_executor(self):
        """Where the leaves of a search run: the same root plans and merges in every case."""
        settings = self.settings
        if settings.ray_address:
            # Cluster mode: this process is a Ray driver; searcher actors run the leaves.
            from seclake.cluster.leaves import RayLeaves

            leaves = RayLeaves.connect(
                settings.ray_address, namespace=settings.ray_namespace, timeout=settings.cluster_timeout_seconds,
                metrics=self.metrics,
            )
            self.metrics.watch(ClusterCollector(leaves.directory))
            return leaves
        if not settings.ingest:
            # No lake of our own: open the catalog's splits from shared storage here.
            from seclake.cluster.splitcache import SplitCache

            cache = SplitCache(
                Layout(settings.data_dir).splits,
                settings.searcher_max_open_splits,
                store=self.split_store,
                cache_dir=settings.effective_split_cache_dir,
                max_bytes=settings.split_cache_bytes,
            )
            return InProcessLeaves(self.search_pool, lambda entry: cache.get(entry.dataset, entry.split_id))
        return self.search_pool

    @cached_property
    def record_ids(self) -> RecordIds:
        """How callers see record ids: opaque by the deployment's key (migration 0013)."""
        return record_ids_in(self.db, self.settings)

    def prepare(self) -> str | None:
        """Migrate the database and create the first admin on an empty one.

        Returns the admin password when it was generated (to show it once).
        """
        self.db.migrate()
        seeded = self.rules.seed()
        if seeded is not None and seeded.source == "legacy":
            log.info("imported %d rules from %s into the database; that directory is no longer read",
                     seeded.count, self.rules.legacy_directory)
        elif seeded is not None:
            log.info("installed the starter rule pack (%d rules)", seeded.count)
        for problem in seeded.errors if seeded is not None else ():
            log.warning("rule file not imported: %s", problem)
        for problem in self.rules.load():
            log.warning("rule skipped: %s", problem)
        admin_password = self.settings.admin_password
        try:
            generated = self.users.ensure_admin(admin_password.get_secret_value() if admin_password else None)
        except ValidationFailed as e:
            # The password is a setting, not a request field: say which.
            problem = e.message.removeprefix(f"{e.field}: ")
            raise ValidationFailed("setting admin_password (SECLAKE_ADMIN_PASSWORD)", problem) from None
        self.readiness.prepared = True
        return generated

    def start(self) -> None:
        for component in self.components:
            component.start()
        for hook in self.on_started:
            hook(self)
        self.readiness.started = True

    def stop(self) -> None:
        for component in reversed(self.components):
            component.stop()
        self.query_tasks.close()
        self.search_pool.shutdown(wait=True)
        if self.parsers is not None:
            self.parsers.close()
        self.audit.close()
        self.db.dispose()


def record_ids_in(db: Database, settings: Settings) -> RecordIds:
    """The record ids a deployment shows: its ``record_ids`` key, unless
    ``opaque_record_ids`` is off. (A function: the benchmark reads them too.)"""
    if not settings.opaque_record_ids:
        return RecordIds(None)
    with db.session() as s:
        key = s.get(DeploymentKey, "record_ids")
        if key is None:
            raise RuntimeError("the database has no record_ids key: run the migrations (seclake serve does)")
        return RecordIds(key.value)
