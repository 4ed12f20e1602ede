"""Shared fixtures: a real seclake server on a free loopback port, real
databases (SQLite always, PostgreSQL when SECLAKE_TEST_PG_URL is set), and a
controllable clock for service tests.

    def test_x(server):                       # one server for the whole session
        token = server.login()
        users = server.call("auth/userList", {}, token=token)

    def test_y(start_server):                 # a server with its own settings
        srv = start_server(session_idle_minutes=0.02)
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from seclake.api.app import create_app
from seclake.service import password
from seclake.services import Services
from seclake.settings import Settings, load_settings

ADMIN_PASSWORD = "admin-test-password"
PG_ENV = "SECLAKE_TEST_PG_URL"

# The developer's own SECLAKE_* settings must not change what tests see.
for _name in [n for n in os.environ if n.startswith("SECLAKE_") and n != PG_ENV]:
    del os.environ[_name]

# Passwords are hashed with the real argon2id, at a cost for tests: OWASP's
# parameters (m=19 MiB, t=2) take ~40 ms a hash or check here, and the suite
# makes thousands (an admin and a stand-in hash per services, a check per
# login), minutes of its wall time. Servers started as processes keep the
# shipped parameters, which tests/service/test_password.py checks.
SHIPPED_PASSWORD_COST = password.TIME_COST, password.MEMORY_COST_KIB
password.TIME_COST, password.MEMORY_COST_KIB = 1, 1024


@pytest.fixture
def shipped_password_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hasher's shipped parameters for the services made after this fixture."""
    monkeypatch.setattr(password, "TIME_COST", SHIPPED_PASSWORD_COST[0])
    monkeypatch.setattr(password, "MEMORY_COST_KIB", SHIPPED_PASSWORD_COST[1])


# -- a running server -------------------------------------------------------


class RunningServer:
    def __init__(self, url: str, settings: Settings, services: Services):
        self.url = url
        self.settings = settings
        self.services = services
        self.http = httpx.Client(base_url=url, timeout=30)
        self.stop: Callable[[], None] = lambda: None  # set by running_server


    def post(self, name: str, kargs: Any = None, token: str | None = None, **kwargs: Any) -> httpx.Response:
        """POST /api/<name> with {"kargs": kargs}; returns the raw response."""
        headers = dict(kwargs.pop("headers", {}))
        if token:
            headers["Servicetoken"] = token
        if "content" not in kwargs and "json" not in kwargs:
            kwargs["json"] = {"kargs": {} if kargs is None else kargs}
        return self.http.post(f"/api/{name}", headers=headers, **kwargs)

    def call(self, name: str, kargs: Any = None, token: str | None = None) -> Any:
        """Make a call that must succeed; returns its response payload."""
        r = self.post(name, kargs, token)
        body = r.json()
        assert r.status_code == 200 and body["verdict"] == "OK", (r.status_code, body)
        return body["response"]

    def fail(self, name: str, kargs: Any = None, token: str | None = None, status: int = 400, **kw: Any) -> str:
        """Make a call that must fail with ``status``; returns the error message."""
        return error_of(self.post(name, kargs, token, **kw), status, self.settings.http_error_status)

    def login(self, username: str = "admin", password: str = ADMIN_PASSWORD) -> str:
        return self.call("auth/login", {"username": username, "password": password})["sessionToken"]

    def add_user(self, admin_token: str, username: str, roles: list[str], password: str = "user-password-1") -> str:
        """Create a user and return a session token of that user."""
        self.call("auth/userAdd", {"user": {"username": username, "password": password, "roles": roles}}, admin_token)
        return self.login(username, password)


def status_of(r: httpx.Response) -> int:
    """The HTTP status an API reply stands for: by default errors are sent
    with 200 (the clients read only those), the status in X-Seclake-Status."""
    return int(r.headers.get("X-Seclake-Status", r.status_code))


def error_of(r: httpx.Response, status: int, real: bool = False) -> str:
    """The message of an ERROR envelope standing for ``status``; ``real``:
    the server sends real statuses (setting ``http_error_status``)."""
    body = r.json()
    assert (status_of(r), r.status_code) == (status, status if real else 200), (r.status_code, r.headers, body)
    assert body["verdict"] == "ERROR" and set(body) == {"verdict", "error"}, body
    return body["error"]


@contextmanager
def running_server(data_dir: Path, **overrides: Any) -> Iterator[RunningServer]:
    """A real uvicorn server in a thread, on a free 127.0.0.1 port."""
    overrides.setdefault("admin_password", ADMIN_PASSWORD)
    settings = load_settings(data_dir=data_dir, **overrides)
    default_db = settings.data_dir / "seclake.db"
    if settings.database_url is None and not default_db.exists():
        sqlite_at_head(default_db)  # a first start's database, without the migrations' time
    app = create_app(settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # As `seclake serve`: the app alone reads forwarding headers (setting trusted_proxies).
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", proxy_headers=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("seclake test server did not start")
        time.sleep(0.02)
    running = RunningServer(f"http://127.0.0.1:{port}", settings, app.state.services)

    def stop() -> None:
        running.http.close()
        server.should_exit = True
        thread.join(20)
        sock.close()

    running.stop = stop
    try:
        yield running
    finally:
        stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("server")) as srv:
        yield srv


@pytest.fixture(scope="session")
def admin_token(server: RunningServer) -> str:
    return server.login()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., RunningServer]]:
    """Start servers with their own settings; all are stopped after the test."""
    with_stack: list[Any] = []

    def start(data_dir: Path | None = None, **overrides: Any) -> RunningServer:
        cm = running_server(data_dir or tmp_path / f"data{len(with_stack)}", **overrides)
        srv = cm.__enter__()
        with_stack.append(cm)
        return srv

    yield start
    for cm in reversed(with_stack):
        cm.__exit__(None, None, None)


def unique(prefix: str = "u") -> str:
    return f"{prefix}{secrets.token_hex(4)}"


@pytest.fixture
def new_name() -> Callable[[str], str]:
    """Unique usernames, so tests sharing the session server do not collide."""
    return unique


# -- databases ---------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{PG_ENV} is not set: in CI PostgreSQL must be available (scripts/test-postgres.sh)")
        pytest.skip(f"{PG_ENV} is not set; run `make test` or scripts/test-postgres.sh to test on PostgreSQL")
    return url


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    """A fresh schema on the test PostgreSQL; yields a URL whose search_path is it."""
    schema = f"t_{secrets.token_hex(6)}"
    admin = create_engine(base_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"CREATE SCHEMA {schema}"))
    url = make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def pg_database_url(pg_url: str) -> Iterator[str]:
    """A fresh, empty schema on the test PostgreSQL, as a database URL."""
    with pg_schema(pg_url) as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty metadata database: a SQLite file, then a PostgreSQL schema (the migrations' own tests)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
    else:
        with pg_schema(request.getfixturevalue("pg_url")) as url:
            yield url


# A database at the newest revision is a copy of one migrated once per worker:
# the migrations took 0.3 s (SQLite) to 0.7 s (PostgreSQL) of every test that
# had a database, several minutes of the suite. A copy is what migrate() makes
# (the revision row included, so migrate() finds nothing to do).


_sqlite_template: Path | None = None


def sqlite_at_head(dest: Path) -> None:
    """Write at ``dest`` a SQLite database at the newest revision: a copy of this process's template."""
    global _sqlite_template
    if _sqlite_template is None:
        from seclake.db.database import Database

        made = Path(tempfile.mkdtemp(prefix="seclake-test-template-")) / "head.db"
        atexit.register(shutil.rmtree, made.parent, True)
        database = Database(f"sqlite:///{made}")
        database.migrate()
        database.dispose()
        assert not made.with_name(made.name + "-wal").exists()  # all of it in the one file copied
        _sqlite_template = made
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_sqlite_template, dest)


@pytest.fixture(scope="session")
def pg_template(pg_url: str) -> Iterator[str]:
    """A PostgreSQL database migrated once, which each test's database is created from (CREATE DATABASE ... TEMPLATE)."""
    from seclake.db.database import Database

    name = f"template_{secrets.token_hex(6)}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"CREATE DATABASE {name}"))
    database = Database(make_url(pg_url).set(database=name).render_as_string(hide_password=False))
    database.migrate()
    database.dispose()  # a template takes no connections while it is copied
    try:
        yield name
    finally:
        with admin.connect() as c:
            c.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A metadata database at the newest revision: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        path = tmp_path / "test.db"
        sqlite_at_head(path)
        yield f"sqlite:///{path}"
        return
    pg_url, template = request.getfixturevalue("pg_url"), request.getfixturevalue("pg_template")
    name = f"t_{secrets.token_hex(6)}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"CREATE DATABASE {name} TEMPLATE {template}"))
    try:
        yield make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


class Clock:
    """A clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 21, 10, 0, 0, 123000, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def services(database_url: str, tmp_path: Path, clock: Clock, request: pytest.FixtureRequest) -> Iterator[Services]:
    """Services on each database, with the admin created, on a fake clock;
    ``@pytest.mark.settings(name=value, ...)`` on a test or module changes settings."""
    marker = request.node.get_closest_marker("settings")
    settings = load_settings(data_dir=tmp_path / "data", database_url=database_url, admin_password=ADMIN_PASSWORD,
                             **(marker.kwargs if marker else {}))
    svc = Services(settings, clock=clock)
    svc.prepare()
    try:
        yield svc
    finally:
        svc.stop()


# -- the lake ---------------------------------------------------------------


@pytest.fixture
def db(database_url: str) -> Iterator[Any]:
    """A migrated metadata database (SQLite, then PostgreSQL)."""
    from seclake.db.database import Database

    database = Database(database_url)
    database.migrate()
    yield database
    database.dispose()


@pytest.fixture
def lake_factory(tmp_path: Path, db: Any) -> Iterator[Callable[..., Any]]:
    """Open a lake on the same data dir and database, as a restarted server would."""
    from seclake.storage.lake import Lake

    opened: list[Any] = []

    def open_lake(background: bool = False, **options: Any) -> Any:
        lake = Lake(tmp_path / "data", db, commit_interval=0.05, **options)
        lake.start(background=background)
        opened.append(lake)
        return lake

    yield open_lake
    for lake in opened:
        try:
            lake.stop()
        except Exception:
            pass


# -- where each test runs under xdist ----------------------------------------


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests sharing a module-scoped fixture (a Ray cluster, a server with
    data, a browser's install) run on one xdist worker, so the fixture is made
    once (``--dist loadgroup``, the Makefile's default); xdist's default
    ``load`` spread them, and every worker made its own. The other tests are
    still handed out one by one."""
    for item in items:
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d.scope == "module" for chain in defs.values() for d in chain):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))
    # Modules with a slow test first: xdist hands work out in collection order
    # (after the groups, largest first), and a two-minute test handed out last
    # made the suite's tail; a stable sort keeps each module's tests together.
    slow = {item.module.__name__ for item in items if item.module and item.get_closest_marker("slow")}
    items.sort(key=lambda item: not (item.module and item.module.__name__ in slow))
