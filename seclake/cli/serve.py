"""``seclake serve`` and ``seclake up``: run the HTTP server."""

from __future__ import annotations

from typing import Annotated

import typer

from seclake.cli.collector import quiet_collector
from seclake.cli.options import ConfigFile, DataDir
from seclake.settings import Settings, load_settings

Host = Annotated[str | None, typer.Option(help="Listen address (env SECLAKE_HOST; default 127.0.0.1).", show_default=False)]
Port = Annotated[int | None, typer.Option(help="Listen port (env SECLAKE_PORT; default 8080).", show_default=False)]
RayAddress = Annotated[
    str | None,
    typer.Option("--ray-address", help="Cluster mode: Ray cluster HOST:PORT whose searchers run the searches (env SECLAKE_RAY_ADDRESS).", show_default=False),
]
Standby = Annotated[
    bool | None,
    typer.Option("--standby/--no-standby", help="Wait until the running ingest node of this data dir ends, then take over (env SECLAKE_STANDBY).", show_default=False),
]
Ingest = Annotated[
    bool | None,
    typer.Option("--ingest/--no-ingest", help="Own the lake and take imports (env SECLAKE_INGEST; default yes); --no-ingest on extra API nodes.", show_default=False),
]


Listen = Annotated[
    list[str] | None,
    typer.Option("--listen", help="Syslog listener URL, repeatable, e.g. syslog+udp://0.0.0.0:5514?vendor=fortigate (env SECLAKE_LISTENERS, comma-separated).", show_default=False),
]


def _command(demo: bool, doc: str):
    """``serve`` and ``up`` take the same options; only the demo loading differs."""

    def command(
        host: Host = None,
        port: Port = None,
        data_dir: DataDir = None,
        config: ConfigFile = None,
        ray_address: RayAddress = None,
        ingest: Ingest = None,
        standby: Standby = None,
        listen: Listen = None,
    ) -> None:
        settings = load_settings(
            host=host, port=port, data_dir=data_dir, config=config, ray_address=ray_address, ingest=ingest,
            standby=standby, listeners=listen or None,
        )
        _run(settings, demo=demo)

    command.__doc__ = doc
    return command


EVERY_SETTING = "Every setting is also read from SECLAKE_<NAME> and a TOML file (the README's configuration table)."
serve = _command(False, f"Run the HTTP server (creates the data dir and the first admin as needed). {EVERY_SETTING}")
up = _command(True, f"Run the server; on an empty data dir, load demo data first (setting load_demo). {EVERY_SETTING}")


def _run(settings: Settings, demo: bool) -> None:
    import uvicorn

    from seclake.api.app import create_app
    from seclake.service.logformat import configure as configure_logs
    from seclake.service.priority import favour_interactive
    from seclake.services import Services

    configure_logs(settings.log_level, settings.log_format)
    if settings.standby and not settings.ingest:
        typer.echo("error: --standby is for an ingest node (it takes over the lake); drop --no-ingest", err=True)
        raise typer.Exit(2)
    # The port first: a taken port fails the command at once, before an admin
    # is created (its password shown) or demo data loaded. A standby binds
    # only once it takes over (it does not listen while it waits).
    sock = None if settings.standby else bind(settings.host, settings.port)
    _warn_if_interpreted()
    _say_allocator()
    favour_interactive()
    services = Services(settings)
    if settings.standby:
        # Before the server starts: a standby does not listen (a load
        # balancer's health check keeps traffic away), and SIGTERM still ends
        # it while it waits.
        typer.echo(f"standby: waiting to take over the lake in {settings.data_dir} when its writer ends")
        services.lake.take_lock(wait=True)
        sock = bind(settings.host, settings.port)
    typer.echo(f"seclake: preparing {settings.data_dir} (database migrations, rules, the first admin)")
    app = create_app(settings, services)
    if demo and settings.load_demo and settings.ingest:
        services.on_started.append(_load_demo_when_empty)
    services.on_started.append(_announce_when_ready)
    quiet_collector()
    # JSON lines: uvicorn's own lines go through our handler, its text access lines are off.
    json_logs = settings.log_format == "json"
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level=settings.log_level,
                            log_config=None if json_logs else uvicorn.config.LOGGING_CONFIG,
                            access_log=not json_logs,
                            # uvicorn trusts X-Forwarded-For from loopback by default; the
                            # app reads it from trusted_proxies only (api/proxies.py).
                            proxy_headers=False)
    uvicorn.Server(config).run(sockets=[sock])


def bind(host: str, port: int):
    """The HTTP server's socket, bound and listening; exits with what to change when it cannot be."""
    import errno
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as e:
        typer.echo(f"error: cannot listen on {host}:{port}: {e.strerror or e}; "
                   "set the address with --host or SECLAKE_HOST (setting host)", err=True)
        raise typer.Exit(1) from None
    try:
        # Like uvicorn: a restart may bind while the old connections linger in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)  # now: another process can no longer take the port meanwhile
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            hint = (f"another program (or another seclake) is using port {port}; "
                    "choose another with --port or SECLAKE_PORT (setting port)")
        elif e.errno == errno.EACCES:
            hint = f"port {port} needs privileges here; choose one above 1023 with --port or SECLAKE_PORT (setting port)"
        else:
            hint = "check --host/SECLAKE_HOST and --port/SECLAKE_PORT (settings host and port)"
        typer.echo(f"error: cannot listen on {host}:{port}: {e.strerror}; {hint}", err=True)
        raise typer.Exit(1) from None
    sock.set_inheritable(True)
    typer.echo(f"seclake: listening on http://{_url_host(host)}:{port}/ (answers once started)")
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _warn_if_interpreted() -> None:
    """Say so when the per-record path runs as plain Python (seclake/native.py):
    ingest is ~1.2x slower, which an operator should not have to discover."""
    import logging

    from seclake import native

    interpreted = native.interpreted()
    if interpreted and native.wanted() and native.building():
        logging.getLogger("seclake").info(
            "%d of %d per-record modules run from source while they compile in the background "
            "(build/native/make.log): the next start runs them compiled, ingest ~1.2x faster",
            len(interpreted), len(native.MODULES))
    elif interpreted and native.wanted():
        logging.getLogger("seclake").warning(
            "%d of %d per-record modules run from source, not compiled (%s%s): ingest is slower; "
            "compile them with `make native` (a C compiler and Python's headers needed)",
            len(interpreted), len(native.MODULES), ", ".join(interpreted[:3]), ", ..." if len(interpreted) > 3 else "",
        )


def _say_allocator() -> None:
    """Say which allocator the split builders get (``storage/allocator.py``):
    without jemalloc they build ~1.2x slower."""
    import logging

    from seclake.storage import allocator

    log = logging.getLogger("seclake")
    if allocator.setting() not in allocator.CHOICES:
        log.warning("SECLAKE_ALLOCATOR=%r is not one of %s: taken as jemalloc (where installed)",
                    allocator.setting()[:40], ", ".join(allocator.CHOICES))
    if allocator.preloaded():
        log.info("split builders use jemalloc (%s)", allocator.library())
    elif not allocator.turned_off():
        log.info("split builders use the system allocator: install jemalloc (Debian: libjemalloc2) "
                 "for ~1.2x faster split building")


def _announce_when_ready(services) -> None:
    """Print once the node serves complete answers (GET /readyz): after a
    restart, once the replayed log is searchable again."""
    import threading
    import time

    def wait() -> None:
        started = time.monotonic()
        while not services.readiness.ready():
            time.sleep(0.1)  # said soon after it is so (a script may wait for the line)
        settings = services.settings
        typer.echo(f"seclake is ready on http://{_url_host(settings.host)}:{settings.port}/: every acknowledged "
                   f"record is searchable ({time.monotonic() - started:.1f} s after start)")

    threading.Thread(target=wait, name="seclake-ready", daemon=True).start()


def _load_demo_when_empty(services) -> None:
    # Runs inside the server's start-up, with every component running, so the
    # demo goes through the whole ingestion path, behavior rules included.
    from seclake.cli.lake import load_demo_with_progress

    if services.lake.is_empty():
        totals = load_demo_with_progress(services, services.settings.demo_days)
        services.detector.save()
        typer.echo(f"loaded {totals['accepted'] + totals['raw']} demo records ({services.settings.demo_days} days)")
