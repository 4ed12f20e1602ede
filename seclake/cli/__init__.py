"""The ``seclake`` command: one module per command group."""

from __future__ import annotations

import atexit
import os
import sys
import threading

import typer

from seclake.cli import access, alerts, bench, cluster, config, lake, query, rules, serve, sso, status, token, user

app = typer.Typer(help="seclake: self-hosted security analytics query service.", no_args_is_help=True)
app.command("serve")(serve.serve)
app.command("up")(serve.up)
app.command("status")(status.status)
app.command("config")(config.config)
app.command("import")(lake.import_files)
app.command("demo")(lake.demo)
app.command("retention")(lake.retention)
app.command("backup")(lake.backup)
app.add_typer(lake.lake_app, name="lake")
app.add_typer(user.app, name="user")
app.add_typer(token.app, name="token")
app.add_typer(rules.app, name="rules")
app.add_typer(alerts.app, name="alerts")
app.add_typer(sso.app, name="sso")
app.add_typer(access.policy_app, name="policy")
app.add_typer(access.role_app, name="role")
app.command("bench")(bench.bench)
app.command("query")(query.query)
app.command("searcher")(cluster.searcher)
app.add_typer(cluster.cluster_app, name="cluster")


def main() -> None:
    from seclake.errors import SeclakeError
    from seclake.storage import allocator

    # Before any thread or process starts: the build workers spawned later use jemalloc.
    allocator.for_children()
    try:
        app()  # ends with SystemExit, as click's commands do
    except SystemExit as e:
        _exit(e.code)
    except SeclakeError as e:
        # What a command did not catch itself (a bad setting found at start):
        # the message, not a traceback.
        typer.echo(f"error: {e}", err=True)
        _exit(1)
    _exit(0)


def _exit(code: int | str | None) -> None:
    """End the process without the interpreter's teardown.

    Freeing every object of every module took 0.17-0.3 s at the end of each
    command (``seclake user list`` 0.84 s in all, 0.67 s without it; an import
    command pays it once per file set). Nothing of ours needs it: a command
    has stopped its services, the lake's files are synced and the database is
    closed before this. The exit functions still run (logging's flush,
    multiprocessing's clean-up); with a thread still running that is not a
    daemon, Python's own exit joins it as usual.
    """
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)  # what SystemExit("message") prints
        code = 1
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
