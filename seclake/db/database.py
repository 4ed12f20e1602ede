"""Engine and session handling for the metadata database, and migrations.

SQLite (the default) is put in WAL mode with foreign keys on. Its
transactions normally begin deferred; ``session(write=True)`` begins with
``BEGIN IMMEDIATE`` instead, so a transaction that reads and then writes
waits for the write lock up front rather than failing with "database is
locked" when another writer got there between its read and its write.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"


def head_revision() -> str:
    """The newest revision shipped: revisions are named by their file's
    number (``versions/0013_deployment_keys.py`` is ``"0013"``; a test holds
    this to alembic's own answer)."""
    return max(p.name[:4] for p in (MIGRATIONS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def alembic_config() -> "Config":
    """Alembic's configuration of the shipped migrations (loads alembic)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


_BEGIN = "seclake_sqlite_begin"


class Database:
    def __init__(self, url: str):
        # Registers the session events that count access changes; imported
        # here because every writer of those tables holds a Database.
        from seclake.db import generation  # noqa: F401

        self.url = make_url(url)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        if self.is_sqlite:
            if self.url.database and self.url.database != ":memory:":
                Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
            self.engine = create_engine(
                self.url, connect_args={"check_same_thread": False, "timeout": 30}
            )
            _configure_sqlite(self.engine)
        else:
            self.engine = create_engine(self.url, pool_pre_ping=True)
        # Counter reads (``read_counter``) on a SQLite file: one connection per
        # thread, dropped with it (the set holds them weakly, to close at dispose;
        # a thread's next read opens it again).
        database = self.url.database
        plain_file = self.is_sqlite and database and database != ":memory:" and not database.startswith("file:") \
            and not self.url.query
        # Resolved now, as the engine's first connection (the migration at start) resolves it.
        self._reader_path: str | None = str(Path(database).resolve()) if plain_file else None
        self._readers = threading.local()
        self._opened_readers: weakref.WeakSet[_Reader] = weakref.WeakSet()
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_sessions = sessionmaker(
            self.engine.execution_options(**{_BEGIN: "BEGIN IMMEDIATE"}), expire_on_commit=False
        )

    @contextmanager
    def session(self, write: bool = False) -> Iterator[Session]:
        """A session in one transaction: committed on success, rolled back on error."""
        factory = self._write_sessions if write and self.is_sqlite else self._sessions
        with factory() as s, s.begin():
            yield s

    def read_counter(self, table: str) -> int:
        """``value`` of row 1 of a change counter table (access_generation, rule_generation), as committed now.

        Read on every call, so never through the SQL layer (its statement
        handling cost eight times the read). On a SQLite file, each thread
        reads on a connection of its own, kept for the thread's life: the
        pool's checkout and reset around a read through the engine cost ~7x
        the read itself (112 against 15 µs per read, measured here), a tenth
        of a search call's time outside the search. Autocommit: every read
        sees what is committed at that moment (WAL mode: readers never wait
        for the writer). ``table`` is a constant of the caller, never input.
        """
        if self._reader_path is not None:
            reader = getattr(self._readers, "reader", None)
            if reader is None:
                reader = self._readers.reader = _Reader(self._reader_path)
                self._opened_readers.add(reader)
            return reader.read(table)
        connection = self.engine.raw_connection()
        try:
            cursor = connection.cursor()
            cursor.execute(f"SELECT value FROM {table} WHERE id = 1")
            row = cursor.fetchone()
            cursor.close()
            return int(row[0]) if row else 0
        finally:
            connection.close()

    def revision(self) -> str | None:
        """The schema's revision, None for a database alembic never touched."""
        try:
            with self.engine.connect() as connection:
                return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        except Exception:  # noqa: BLE001 - no version table yet: a new database
            return None

    def migrate(self) -> None:
        """Bring the schema to the newest revision shipped in the package.

        A schema already there is told by its version row without loading
        alembic, which took ~0.1 s of every command's start (an import
        command runs for seconds)."""
        if self.revision() != head_revision():
            self.upgrade("head")

    def upgrade(self, revision: str) -> None:
        """Run the migrations up to ``revision`` (tests start from older ones)."""
        from alembic import command

        config = alembic_config()
        with self.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)

    def dispose(self) -> None:
        for reader in list(self._opened_readers):
            reader.close()
        self.engine.dispose()


class _Reader:
    """A thread's counter-reading connection, opened on its first read.

    A holder, since sqlite3's connections take no weak references. The lock is
    for ``close``, called by ``dispose`` from another thread: the sqlite3
    module does not guard a connection closed while a statement runs on it in
    another thread, and the process crashes (SIGSEGV, reproduced here in a few
    hundred tries). Uncontended, it costs a fraction of a microsecond a read.
    """

    __slots__ = ("path", "connection", "lock", "__weakref__")

    def __init__(self, path: str):
        self.path = path
        self.connection: sqlite3.Connection | None = None
        self.lock = threading.Lock()

    def read(self, table: str) -> int:
        with self.lock:
            if self.connection is None:  # first read, or the first since ``close``
                self.connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            row = self.connection.execute(f"SELECT value FROM {table} WHERE id = 1").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        with self.lock:
            if self.connection is not None:
                self.connection.close()
                self.connection = None


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when BEGIN is sent.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        connection.exec_driver_sql(connection.get_execution_options().get(_BEGIN, "BEGIN"))
