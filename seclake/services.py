"""Everything the service is made of, built from one settings object.

The HTTP app and the CLI both build a ``Services``; nothing in it knows about
HTTP. Long-running parts (the lake, the indexer...) are appended to
``components`` and started and stopped with the server.
"""

from __future__ import annotations

from typing import Protocol

from concurrent.futures import ThreadPoolExecutor

from seclake.db.database import Database
from seclake.detect.summaries import SummaryStore
from seclake.search.root import Root
from seclake.service.ingestion import Ingestion
from seclake.service.retention import RetentionSchedule
from seclake.storage.lake import Lake
from seclake.service.audit import Audit
from seclake.service.authentication import Authentication
from seclake.service.clock import Clock, utc_now
from seclake.service.login import Login
from seclake.service.password import PasswordHasher
from seclake.service.sessions import Sessions
from seclake.service.tokens import Tokens
from seclake.service.users import Users
from seclake.settings import Settings


class Component(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


class Services:
    def __init__(self, settings: Settings, clock: Clock = utc_now):
        self.settings = settings
        self.clock = clock
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.db = Database(settings.effective_database_url)
        self.hasher = PasswordHasher()
        self.users = Users(self.db, self.hasher, settings, clock)
        self.sessions = Sessions(self.db, settings, clock)
        self.tokens = Tokens(self.db, clock)
        self.audit = Audit(self.db, clock)
        self.auth = Authentication(self.sessions, self.tokens)
        self.login = Login(self.db, self.hasher, self.sessions, self.audit, settings, clock)
        self.components: list[Component] = []
        # The lake: durable appends, background indexing, searches over splits.
        self.lake = Lake(settings.data_dir, self.db, commit_interval=settings.commit_interval_seconds)
        # tantivy releases the GIL while searching: leaves run in parallel threads.
        self.search_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="seclake-leaf")
        self.search = Root(self.lake.splits, self.search_pool, max_expansions=settings.max_expansions)
        self.ingestion = Ingestion(self.lake)
        # Behavior summaries (daily per key): folded by the detector, triaged and searched by calls.
        self.summaries = SummaryStore(self.db, settings.score_bands)
        self.components.append(self.lake)
        self.components.append(
            RetentionSchedule(self.lake, settings.retention_days, settings.retention_interval_minutes)
        )

    def prepare(self) -> str | None:
        """Migrate the database and create the first admin on an empty one.

        Returns the admin password when it was generated (to show it once).
        """
        self.db.migrate()
        admin_password = self.settings.admin_password
        return self.users.ensure_admin(admin_password.get_secret_value() if admin_password else None)

    def start(self) -> None:
        for component in self.components:
            component.start()

    def stop(self) -> None:
        for component in reversed(self.components):
            component.stop()
        self.search_pool.shutdown(wait=True)
        self.db.dispose()
