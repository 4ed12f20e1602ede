import pytest

from seclake.db.database import Database
from seclake.storage.lake import Lake


@pytest.fixture
def db(database_url):
    # The catalog runs on both metadata databases: SQLite and PostgreSQL.
    database = Database(database_url)
    database.migrate()
    yield database
    database.dispose()


@pytest.fixture
def lake_factory(tmp_path, db):
    """Open a lake on the same data dir and database, as a restarted server would."""
    opened = []

    def open_lake(background: bool = False) -> Lake:
        lake = Lake(tmp_path / "data", db, commit_interval=0.05)
        lake.start(background=background)
        opened.append(lake)
        return lake

    yield open_lake
    for lake in opened:
        try:
            lake.stop()
        except Exception:
            pass
