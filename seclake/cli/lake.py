"""``seclake import``, ``seclake demo``, ``seclake retention``: the lake from the shell.

These open the lake directly, so they need the server stopped (the lake
refuses a second writer and says so); with a server running, send logs to
``POST /api/import/<vendor>`` instead. ``seclake lake check`` and ``seclake
lake acknowledge-damage`` only read and mark the log's damage ledger
(``storage/damage.py``), so they run beside a server as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, BinaryIO

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from seclake.cli.collector import quiet_collector
from seclake.cli.manifest import sources
from seclake.cli.options import ConfigFile, DataDir, started_services
from seclake.errors import SeclakeError, ValidationFailed
from seclake.service.demo import load_demo
from seclake.service.idempotency import LOCAL, MAX_KEY, parse_key
from seclake.settings import load_settings
from seclake.storage.lake import Lake

console = Console(stderr=True)


class _Counting:
    """A file wrapper that reports bytes read, for the progress bar."""

    def __init__(self, f: BinaryIO, advance):
        self.f = f
        self.advance = advance

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.advance(len(data))
        return data




def import_files(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Log files, plain or gzip.", exists=True, dir_okay=False, show_default=False),
    ] = None,
    type_: Annotated[str, typer.Option("--type", help="event or flow.")] = "event",
    format_: Annotated[str, typer.Option("--format", help="auto, jsonl, syslog, cef or kv.")] = "auto",
    vendor: Annotated[str, typer.Option(help="Vendor name: becomes @source and a tag.")] = "import",
    customer: Annotated[str | None, typer.Option(help="Customer of records that name none.")] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            help="CSV of more files to import, each with its own source: a header row naming path and any of "
            "vendor, type, customer, format (an empty cell takes the option's value); relative paths are "
            "relative to the manifest.",
            exists=True, dir_okay=False, show_default=False,
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            help="Run key: each batch is stored at most once under <key>.<file>.<batch>, so running the same "
            "command again (after a crash) stores only what is not stored yet.",
        ),
    ] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Import log files into the lake, with a progress bar and final counts."""
    try:
        todo = sources(files or [], manifest, vendor=vendor, dataset=type_, fmt=format_, customer=customer)
        if not todo:
            raise ValidationFailed("files", "name at least one log file, or a --manifest")
        # Room for the ".<file>.<batch>" each batch's key adds.
        run_key = parse_key([idempotency_key], "--idempotency-key") if idempotency_key is not None else None
        if run_key is not None and len(run_key) > MAX_KEY - 24:
            raise ValidationFailed("--idempotency-key", f"must be at most {MAX_KEY - 24} characters")
    except SeclakeError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    services = started_services(data_dir, config)
    quiet_collector()
    if isinstance(services.lake, Lake):  # not an API node that hands imports on
        # The build workers start while the first lines are parsed, not when
        # the first build needs them.
        services.lake.builder.warm()
    totals = {"accepted": 0, "raw": 0, "rejected": 0, "replayed": 0}
    reasons: list[str] = []
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(), console=console) as bar:
            for number, source in enumerate(todo):
                task = bar.add_task(source.path.name, total=source.path.stat().st_size)
                with open(source.path, "rb") as raw:
                    report = services.ingestion.import_stream(
                        _Counting(raw, lambda n: bar.advance(task, n)),  # type: ignore[arg-type]
                        vendor=source.vendor,
                        dataset=source.dataset,
                        fmt=source.fmt,
                        customer=source.customer,
                        max_bytes=1 << 50,
                        # Files are keyed by their place on the command line: run it the same way again.
                        key=(LOCAL, f"{run_key}.{number}") if run_key is not None else None,
                    )
                for k in totals:
                    totals[k] += report.get(k, 0)
                reasons.extend(f"{source.path.name}: {r}" for r in report["reasons"])
        services.lake.flush()
    except SeclakeError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    finally:
        services.stop()
    for r in reasons[:20]:
        console.print(f"[yellow]rejected[/yellow] {r}")
    typer.echo(f"accepted {totals['accepted']}, kept raw {totals['raw']}, rejected {totals['rejected']}")
    if totals["replayed"]:
        typer.echo(f"{totals['replayed']} of them were stored by an earlier run with this key (not stored again)")
    if totals["rejected"]:
        raise typer.Exit(3)


def demo(
    days: Annotated[int, typer.Option(min=1, max=90, help="Days of data, ending now.")] = 7,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 7,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Write realistic demo events and flows for the last N days, through the real ingestion path."""
    services = started_services(data_dir, config)
    try:
        totals = load_demo_with_progress(services, days, seed)
    finally:
        services.stop()
    typer.echo(f"demo data: accepted {totals['accepted']}, kept raw {totals['raw']}, rejected {totals['rejected']}")


def load_demo_with_progress(services, days: int, seed: int = 7) -> dict[str, int]:
    with Progress(TextColumn("demo data"), BarColumn(), TextColumn("{task.completed} lines"), console=console) as bar:
        task = bar.add_task("demo", total=None)
        totals = load_demo(services.ingestion, days=days, seed=seed, progress=lambda n: bar.advance(task, n))
    services.lake.flush()
    return totals


def retention(
    days: Annotated[int | None, typer.Option(help="Delete splits older than this; default: the retention_days setting.")] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Delete whole splits past the retention age."""
    services = started_services(data_dir, config)
    try:
        max_age = services.settings.retention_days if days is None else days
        deleted = services.lake.retention(max_age)
    finally:
        services.stop()
    typer.echo(f"deleted {deleted} splits older than {max_age} days" if max_age > 0 else "retention is off (0 days)")


def backup(
    dest: Annotated[Path, typer.Argument(help="New directory for the copy; it is a data dir `seclake serve --data-dir` opens.")],
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Copy the deployment (database and lake) while it runs (docs/operations.md)."""
    from seclake.service.backup import BackupRefused
    from seclake.service.backup import backup as copy_deployment

    try:
        report = copy_deployment(load_settings(data_dir=data_dir, config=config), dest)
    except BackupRefused as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2)
    typer.echo(f"backed up to {dest}: {report['splits']} splits ({report['split_bytes']} bytes; "
               f"{report['files_linked']} files linked, {report['files_copied']} copied), "
               f"{report['log_segments']} log segments, database {report['database_bytes']} bytes")


lake_app = typer.Typer(help="The write-ahead log's damage: list it, acknowledge it (docs/operations.md).",
                       no_args_is_help=True)


def _ledger(data_dir: Path | None, config: Path | None):
    from seclake.storage.damage import DamageLedger
    from seclake.storage.layout import Layout

    return DamageLedger(Layout(load_settings(data_dir=data_dir, config=config).data_dir).wal)


@lake_app.command("check")
def check(data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """List the damage to acknowledged data the write-ahead log found at its starts; exit status 1 while any
    is not acknowledged."""
    entries = _ledger(data_dir, config).entries()
    if not entries:
        typer.echo("no damage found in the write-ahead log")
        return
    for e in entries:
        state = f"acknowledged {e['acknowledged_at']}" if e.get("acknowledged_at") else "NOT ACKNOWLEDGED"
        typer.echo(f"{e['id']} (found {e.get('found_at', '?')}, {state})\n  {e['message']}")
    waiting = sum(1 for e in entries if not e.get("acknowledged_at"))
    if waiting:
        typer.echo(f"{waiting} not acknowledged: once dealt with (docs/operations.md), run "
                   "`seclake lake acknowledge-damage`")
        raise typer.Exit(1)
    typer.echo("all acknowledged")


@lake_app.command("acknowledge-damage")
def acknowledge_damage(
    ids: Annotated[list[str] | None, typer.Argument(help="Ids from `seclake lake check`; none: all.", show_default=False)] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Mark log damage as seen: /healthz, /readyz and seclake_log_damage_unacknowledged stop naming it."""
    try:
        done = _ledger(data_dir, config).acknowledge(ids or None)
    except (KeyError, ValueError) as e:
        typer.echo(f"error: {e.args[0] if isinstance(e, KeyError) else e}", err=True)
        raise typer.Exit(2) from None
    if not done:
        typer.echo("nothing to acknowledge")
        return
    typer.echo(f"acknowledged {len(done)}: " + ", ".join(e["id"] for e in done))
