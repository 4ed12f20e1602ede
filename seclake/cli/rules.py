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
    paths: Annotated[list[Path], typer.Argument(
        help="Rule files (seclake YAML or Sigma), directories of them (walked, as a SigmaHQ rules*/ tree), "
             "or zip files (a SigmaHQ release zip as it is).", show_default=False)],
    replace: Annotated[bool, typer.Option("--replace", help="Also delete the rules the files do not hold.")] = False,
    status: Annotated[list[str] | None, typer.Option("--status", help="Sigma rules of this status only (repeat or comma-separate: stable,test).")] = None,
    level: Annotated[str | None, typer.Option("--level", help="Sigma rules of this level and above only (informational, low, medium, high, critical).")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Sigma rules with a tag starting with this only (repeat: attack.t1059).")] = None,
    key_field: Annotated[str | None, typer.Option("--key-field", help="Key Sigma rules' behaviors by this field instead of their log source's (host.name, user.name, source.ip).")] = None,
    key_type: Annotated[str | None, typer.Option("--key-type", help="The key type with --key-field (host, username, ip...).")] = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Import Sigma rules disabled (enable them later, in bulk, on the rules page).")] = False,
    list_skipped: Annotated[bool, typer.Option("--list-skipped", help="Name every skipped Sigma rule and why.")] = False,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Add and update rules from seclake YAML and Sigma files in one transaction.

    An invalid seclake rule file imports nothing. A Sigma rule that cannot
    run as Sigma means it is skipped with its reason (counted by reason);
    the others are imported.
    """
    from seclake.errors import ValidationFailed
    from seclake.sigma.importer import LEVELS, Filters, read

    missing = [p for p in paths if not p.exists()]
    for p in missing:
        typer.echo(f"error: {p}: no such file or directory", err=True)
    if missing:
        raise typer.Exit(2)
    if level is not None and level not in LEVELS:
        typer.echo(f"error: --level: {level!r} is not one of {', '.join(LEVELS)}", err=True)
        raise typer.Exit(2)
    if key_type is not None and key_field is None:
        typer.echo("error: --key-type goes with --key-field", err=True)
        raise typer.Exit(2)
    statuses = frozenset(s.strip().lower() for given in status or [] for s in given.split(",") if s.strip())
    opened = []

    def book():  # opened only when a Sigma correlation names rules outside the files (maybe in the book)
        if not opened:
            opened.append(open_services(data_dir, config))
        return opened[0].rules

    report = read(paths, Filters(statuses, level, tuple(tag or ())), key_field=key_field, key_type=key_type,
                  enabled=not disabled, known=lambda: book().rules())
    if not report.files:
        # --replace with nothing to read would delete every rule.
        typer.echo("error: no rule files (*.yaml, *.yml, *.zip) found there; nothing imported", err=True)
        raise typer.Exit(2)
    for e in report.errors:
        typer.echo(f"invalid: {e}", err=True)
    if report.errors:
        typer.echo(f"{len(report.errors)} problem(s) in {report.files} files; nothing imported", err=True)
        raise typer.Exit(1)
    for s in report.skipped if list_skipped else []:
        typer.echo(f"skipped: {s}", err=True)
    try:
        done = book().import_rules(report.rules, replace=replace) if report.rules else None
    except ValidationFailed as e:  # a correlation naming a rule the book would not hold
        typer.echo(f"invalid: {e.message}; nothing imported", err=True)
        raise typer.Exit(1) from None
    added, updated, unchanged, deleted = (done.added, done.updated, done.unchanged, done.deleted) if done else (0, 0, 0, 0)
    typer.echo(
        f"imported {len(report.rules)} rules: {added} added, {updated} updated, {unchanged} unchanged"
        + (f", {deleted} deleted" if replace else "")
    )
    if report.sigma:
        typer.echo(f"Sigma: {report.sigma} rules read, {report.sigma - len(report.skipped) - len(report.filtered)} "
                   f"imported, {len(report.filtered)} filtered out, {len(report.skipped)} skipped")
        for reason, count in report.by_reason().most_common():
            typer.echo(f"  skipped {count}: {reason}")


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
