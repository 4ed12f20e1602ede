"""seclake query: a piped query asked of a running server, printed as a table, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json

import pytest

from seclake.cli.query import table
from tests.cli.command import run
from tests.conftest import running_server

T0 = 1_763_683_200_000  # 2025-11-21T00:00:00Z


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("query")) as server:
        users = ["root"] * 3 + ["alice, \"the admin\""] * 2 + ["bob"]
        server.services.lake.append([
            ("event", {"@timestamp": T0 + i * 60_000, "@customer": "acme",
                       "@fields": {"user": {"name": u}, "bytes": 100 * (i + 1)}})
            for i, u in enumerate(users)
        ])
        server.services.lake.flush()
        server.token = server.login()
        yield server


def query(srv, *args: str, token: str | None = None):
    return run("query", *args, "--url", srv.url, "--from", str(T0), "--to", str(T0 + 3_600_000),
               env={"SECLAKE_TOKEN": token or srv.token})


STATS = "| STATS n = COUNT(*), bytes = SUM(bytes) BY user.name | SORT n DESC, user.name"


def test_a_table_for_the_terminal(srv):
    done = query(srv, STATS)
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["n", "bytes", "user.name"]
    assert lines[2].split() == ["3", "600", "root"]
    assert lines[3].split()[:2] == ["2", "900"] and lines[3].endswith('alice, "the admin"')
    assert lines[4].split() == ["1", "600", "bob"]
    # Numbers to the right, keywords to the left, under their headings.
    assert lines[0].index("bytes") + len("bytes") == lines[2].index("600") + 3


def test_csv_and_json(srv):
    done = query(srv, STATS, "--format", "csv")
    assert done.exit_code == 0, done.output
    assert list(csv.reader(io.StringIO(done.stdout))) == [
        ["n", "bytes", "user.name"], ["3", "600", "root"], ["2", "900", 'alice, "the admin"'], ["1", "600", "bob"]]
    done = query(srv, STATS, "-f", "json")
    answer = json.loads(done.stdout)
    assert answer["columns"] == [{"name": "n", "type": "long"}, {"name": "bytes", "type": "long"},
                                 {"name": "user.name", "type": "keyword"}]
    assert answer["values"][0] == [3, 600, "root"]


def test_dates_print_as_iso_8601(srv):
    done = query(srv, "user.name:bob | KEEP @timestamp", "-f", "csv")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == ["@timestamp", "2025-11-21T00:05:00.000Z"]


def test_a_query_error_names_the_position_and_fails(srv):
    done = query(srv, "| STATS n = COUNT(*) BY")
    assert done.exit_code == 1
    assert "position" in done.stderr


def test_no_token_and_no_server_are_clear(srv):
    missing = run("query", "| LIMIT 1", "--url", srv.url, env={"SECLAKE_TOKEN": None})
    assert missing.exit_code == 2 and "--token" in missing.stderr
    down = run("query", "| LIMIT 1", "--url", "http://127.0.0.1:9", "--token", "x")
    assert down.exit_code == 2 and "127.0.0.1:9" in down.stderr


def test_long_cells_are_cut_in_tables():
    shown = table([{"name": "m", "type": "keyword"}], [["x" * 100], [None]])
    assert shown.split("\n")[2:] == ["x" * 59 + "…", ""]
