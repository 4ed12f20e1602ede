"""The metadata database on SQLite and PostgreSQL: migrations, models, pragmas."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, select, text

import seclake.db.tables  # noqa: F401
from seclake.db.base import Base
from seclake.db.database import Database, alembic_config, head_revision
from seclake.db.models import ApiToken, User, UserSession


def _user(name: str = "alice") -> User:
    now = datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=UTC)
    return User(
        username=name, password_hash="x", email="", first_name="", last_name="", organization="",
        restricted=False, disabled=False, roles=["analyst"], preference={}, created_on=now, password_date=now,
    )


def test_initial_revision_is_0001() -> None:
    base = ScriptDirectory.from_config(alembic_config()).get_base()
    assert base == "0001"


def test_the_head_told_without_alembic_is_alembics_head() -> None:
    # A database at this revision starts without loading alembic.
    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_a_database_of_an_older_revision_is_brought_to_the_head(empty_database_url: str) -> None:
    database_url = empty_database_url
    db = Database(database_url)
    db.upgrade("0012")
    assert db.revision() == "0012"
    db.migrate()
    assert db.revision() == head_revision() and "deployment_keys" in inspect(db.engine).get_table_names()
    db.dispose()


def test_migrate_creates_tables_and_is_repeatable(empty_database_url: str) -> None:
    database_url = empty_database_url
    db = Database(database_url)
    db.migrate()
    db.migrate()  # a restart runs it again: nothing to do, no error
    tables = set(inspect(db.engine).get_table_names())
    assert {"users", "sessions", "api_tokens", "login_failures", "audit", "alembic_version"} <= tables
    db.dispose()


def test_models_match_the_migrations(empty_database_url: str) -> None:
    """A model changed without a migration shows up here as a difference."""
    database_url = empty_database_url
    db = Database(database_url)
    db.migrate()
    with db.engine.connect() as c:
        diff = compare_metadata(MigrationContext.configure(c), Base.metadata)
    db.dispose()
    assert diff == []


def test_timestamps_come_back_as_the_same_utc_instant(database_url: str) -> None:
    db = Database(database_url)
    db.migrate()
    with db.session(write=True) as s:
        s.add(_user())
    with db.session() as s:
        user = s.scalar(select(User))
    assert user.created_on == datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=UTC)
    assert user.created_on.tzinfo is not None
    db.dispose()


def test_deleting_a_user_deletes_its_sessions_and_tokens(database_url: str) -> None:
    db = Database(database_url)
    db.migrate()
    now = datetime.now(UTC)
    with db.session(write=True) as s:
        user = _user()
        s.add(user)
        s.flush()
        s.add(UserSession(public_id="p", token_hash="h1", user_id=user.id, created_on=now, last_seen=now))
        s.add(ApiToken(token_hash="h2", prefix="slk_", name="", user_id=user.id, created_on=now))
    with db.session(write=True) as s:
        s.delete(s.scalar(select(User)))
    with db.session() as s:
        assert s.scalars(select(UserSession)).all() == []
        assert s.scalars(select(ApiToken)).all() == []
    db.dispose()


def test_a_failed_transaction_leaves_nothing_behind(database_url: str) -> None:
    db = Database(database_url)
    db.migrate()
    with pytest.raises(RuntimeError), db.session(write=True) as s:
        s.add(_user())
        s.flush()
        raise RuntimeError("boom")
    with db.session() as s:
        assert s.scalars(select(User)).all() == []
    db.dispose()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    with db.engine.connect() as c:
        assert c.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert c.execute(text("PRAGMA foreign_keys")).scalar() == 1
    db.dispose()


def test_a_counter_change_is_read_at_once_by_every_thread_and_by_another_node(database_url: str) -> None:
    # The token check reads the access generation on every call (one connection per
    # thread on SQLite): a change committed through the engine, or by another process
    # sharing the database, must be what the very next read returns, in any thread.
    import threading

    from sqlalchemy import update

    from seclake.db.models import AccessGeneration

    db, other = Database(database_url), Database(database_url)
    db.migrate()
    start = db.read_counter("access_generation")
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(db.read_counter("access_generation")))
    for n, writer in enumerate((db, other, db), start=1):
        with writer.session(write=True) as s:
            s.execute(update(AccessGeneration).where(AccessGeneration.id == 1).values(value=AccessGeneration.value + 1))
        assert db.read_counter("access_generation") == start + n
    reader.start()
    reader.join()
    assert seen == [start + 3]
    db.dispose()
    other.dispose()
    # A disposed database reads again (a new connection), and sees the same.
    assert db.read_counter("access_generation") == start + 3
    db.dispose()


_READ_WHILE_DISPOSED = """
import sys, threading
from seclake.db.database import Database
db = Database(sys.argv[1])
db.migrate()
expected = db.read_counter("access_generation")
wrong, stop = [], threading.Event()
def read():
    while not stop.is_set():
        value = db.read_counter("access_generation")
        if value != expected:
            wrong.append(value)
readers = [threading.Thread(target=read) for _ in range(3)]
for t in readers:
    t.start()
for _ in range(300):
    db.dispose()
stop.set()
for t in readers:
    t.join()
print("wrong", wrong)
"""


def test_disposing_while_other_threads_read_the_counter_neither_crashes_nor_fails_a_read(tmp_path) -> None:
    # A service stopping (dispose) while request threads still check tokens: the
    # sqlite3 module crashes the process when a connection is closed under a
    # running statement, so the crash is looked for in a process of its own.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _READ_WHILE_DISPOSED, f"sqlite:///{tmp_path / 'meta.db'}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == "wrong []"
