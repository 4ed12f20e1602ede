"""``seclake rules``: check, export and import rules (detection as code), and run them over stored data.

Rules live in the database (seclake.detect.rulebook); files are how they
travel: ``export`` writes one YAML file per rule, ``import`` reads such
files back, all or nothing, and ``check`` validates files without a database.
"""

from __future__ import annotations

from pathlib import Path
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


Paths = Annotated[list[Path], typer.Argument(help="Rule files, or directories of *.yaml rule files.", show_default=False)]


def _read(paths: list[Path]) -> tuple[list, list[str], int]:
    """The valid rules of these files, their problems (each shown, with file and line), the file count."""
    from seclake.detect.rulebook import read_rule_files, rule_files

    missing = [p for p in paths if not p.exists()]
    for p in missing:
        typer.echo(f"error: {p}: no such file or directory", err=True)
    if missing:
        raise typer.Exit(2)
    rules, errors = read_rule_files(paths)
    for e in errors:
        typer.echo(f"invalid: {e}", err=True)
    return rules, errors, len(rule_files(paths))


@app.command("check")
def check(
    paths: Annotated[list[Path] | None, typer.Argument(help="Rule files or directories to check instead of the database's rules.", show_default=False)] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Validate rule files (file and line of each problem), or without paths the database's rules."""
    if paths:
        rules, errors, files = _read(paths)
        enabled = sum(1 for r in rules if r.enabled)
        typer.echo(f"{len(rules)} rules ({enabled} enabled) in {files} files, {len(errors)} problem(s)")
        if errors:
            raise typer.Exit(1)
        return
    services = open_services(data_dir, config)
    errors = services.rules.load()
    rules = services.rules.rules()
    for e in errors:
        typer.echo(f"invalid: {e}", err=True)
    enabled = sum(1 for r in rules if r.enabled)
    typer.echo(f"{len(rules)} rules ({enabled} enabled), {len(errors)} invalid")
    if errors:
        raise typer.Exit(1)


@app.command("export")
def export(
    directory: Annotated[Path, typer.Argument(help="Directory to write <rule name>.yaml files into.", show_default=False)],
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Write every rule as a YAML file (the starter pack's format), for version control."""
    written = open_services(data_dir, config).rules.export(directory)
    typer.echo(f"exported {len(written)} rules to {directory}")


@app.command("import")
def import_(
    paths: Paths,
    replace: Annotated[bool, typer.Option("--replace", help="Also delete the rules the files do not hold.")] = False,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Add and update rules from YAML files in one transaction; any invalid file imports nothing."""
    rules, errors, files = _read(paths)
    if not files:
        # --replace with nothing to read would delete every rule.
        typer.echo("error: no rule files (*.yaml) found there; nothing imported", err=True)
        raise typer.Exit(2)
    if errors:
        typer.echo(f"{len(errors)} problem(s) in {files} files; nothing imported", err=True)
        raise typer.Exit(1)
    done = open_services(data_dir, config).rules.import_rules(rules, replace=replace)
    typer.echo(
        f"imported {len(rules)} rules: {done.added} added, {done.updated} updated, {done.unchanged} unchanged"
        + (f", {done.deleted} deleted" if replace else "")
    )


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
        report = backfill(services.ingestion, services.rules, services.settings.score_bands, lo, hi, services.record_ids)
    finally:
        services.stop()
    typer.echo(f"scanned {report['scanned']} records, made {report['behaviors']} behaviors")
