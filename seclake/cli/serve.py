"""``seclake serve`` and ``seclake up``: run the HTTP server."""

from __future__ import annotations

from typing import Annotated

import typer

from seclake.cli.collector import quiet_collector
from seclake.cli.options import ConfigFile, DataDir
from seclake.settings import Settings, load_settings

Host = Annotated[str | None, typer.Option(help="Listen address (default 127.0.0.1).", show_default=False)]
Port = Annotated[int | None, typer.Option(help="Listen port (default 8080).", show_default=False)]
RayAddress = Annotated[
    str | None,
    typer.Option("--ray-address", help="Cluster mode: Ray cluster HOST:PORT whose searchers run the searches.", show_default=False),
]
Standby = Annotated[
    bool | None,
    typer.Option("--standby/--no-standby", help="Wait until the running ingest node of this data dir ends, then take over (setting standby).", show_default=False),
]
Ingest = Annotated[
    bool | None,
    typer.Option("--ingest/--no-ingest", help="Own the lake and take imports (default yes); --no-ingest on extra API nodes.", show_default=False),
]


Listen = Annotated[
    list[str] | None,
    typer.Option("--listen", help="Syslog listener URL, repeatable, e.g. syslog+udp://0.0.0.0:5514?vendor=fortigate (setting listeners).", show_default=False),
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


serve = _command(False, "Run the HTTP server (creates the data dir and the first admin as needed).")
up = _command(True, "Run the server; on an empty data dir, load demo data first (setting load_demo).")


def _run(settings: Settings, demo: bool) -> None:
    import uvicorn

    from seclake.api.app import create_app
    from seclake.service.logformat import configure as configure_logs
    from seclake.services import Services

    configure_logs(settings.log_level, settings.log_format)
    _warn_if_interpreted()
    _say_allocator()
    if settings.standby and not settings.ingest:
        typer.echo("error: --standby is for an ingest node (it takes over the lake); drop --no-ingest", err=True)
        raise typer.Exit(2)
    services = Services(settings)
    if settings.standby:
        # Before the server starts: a standby does not listen (a load
        # balancer's health check keeps traffic away), and SIGTERM still ends
        # it while it waits.
        typer.echo(f"standby: waiting to take over the lake in {settings.data_dir} when its writer ends")
        services.lake.take_lock(wait=True)
    app = create_app(settings, services)
    if demo and settings.load_demo and settings.ingest:
        services.on_started.append(_load_demo_when_empty)
    services.on_started.append(_announce_when_ready)
    typer.echo(f"seclake is listening on http://{settings.host}:{settings.port}/")
    quiet_collector()
    # JSON lines: uvicorn's own lines go through our handler, its text access lines are off.
    json_logs = settings.log_format == "json"
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level,
                log_config=None if json_logs else uvicorn.config.LOGGING_CONFIG, access_log=not json_logs)


def _warn_if_interpreted() -> None:
    """Say so when the per-record path runs as plain Python (seclake/native.py):
    ingest is ~1.2x slower, which an operator should not have to discover."""
    import logging

    from seclake import native

    interpreted = native.interpreted()
    if interpreted and native.wanted():
        logging.getLogger("seclake").warning(
            "%d of %d per-record modules run from source, not compiled (%s%s): ingest is slower; "
            "reinstall seclake where a C compiler and Python's headers are present",
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
        typer.echo(f"seclake is ready: every acknowledged record is searchable ({time.monotonic() - started:.1f} s after start)")

    threading.Thread(target=wait, name="seclake-ready", daemon=True).start()


def _load_demo_when_empty(services) -> None:
    # Runs inside the server's start-up, with every component running, so the
    # demo goes through the whole ingestion path, behavior rules included.
    from seclake.cli.lake import load_demo_with_progress

    if services.lake.is_empty():
        totals = load_demo_with_progress(services, services.settings.demo_days)
        services.detector.save()
        typer.echo(f"loaded {totals['accepted'] + totals['raw']} demo records ({services.settings.demo_days} days)")
