"""``seclake rules``: check the rule files, and run the rules over stored data."""

from __future__ import annotations

from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir, open_services, started_services
from seclake.query.datemath import DateError, bound, now_ms

app = typer.Typer(help="Behavior rules.", no_args_is_help=True)


def _time(text: str | None, *, lower: bool) -> int | None:
    if text is None:
        return None
    try:
        return bound(text, now_ms(), lower=lower, inclusive=True)
    except DateError as e:
        option = "--from" if lower else "--to"
        typer.echo(f"error: {option}: {e}; use epoch ms, an ISO 8601 date or now-7d", err=True)
        raise typer.Exit(2) from None


@app.command("check")
def check(data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Load every rule file and report the invalid ones (file and line)."""
    services = open_services(data_dir, config)
    errors = services.rules.load()
    for e in errors:
        typer.echo(f"invalid: {e}", err=True)
    rules = services.rules.rules()
    enabled = sum(1 for r in rules if r.enabled)
    typer.echo(f"{len(rules)} rules ({enabled} enabled), {len(errors)} invalid files")
    if errors:
        raise typer.Exit(1)


@app.command("run")
def run(
    time_from: Annotated[str | None, typer.Option("--from", help="Start: epoch ms, ISO 8601 or date math (now-7d).")] = None,
    time_to: Annotated[str | None, typer.Option("--to", help="End, inclusive.")] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Run the enabled rules over stored events and flows (a backfill), as streaming would have."""
    from seclake.service.backfill import backfill

    lo, hi = _time(time_from, lower=True), _time(time_to, lower=False)
    services = started_services(data_dir, config)
    try:
        report = backfill(services.ingestion, services.rules, services.settings.score_bands, lo, hi)
    finally:
        services.stop()
    typer.echo(f"scanned {report['scanned']} records, made {report['behaviors']} behaviors")
