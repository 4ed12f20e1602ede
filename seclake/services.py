"""Everything the service is made of, built from one settings object.

The HTTP app and the CLI both build a ``Services``; nothing in it knows about
HTTP. Long-running parts (the lake, the indexer...) are appended to
``components`` and started and stopped with the server.
"""

from __future__ import annotations

from typing import Protocol

from seclake.db.database import Database
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
        self.db.dispose()
