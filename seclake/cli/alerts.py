"""``seclake alerts``: notification rules and destinations as files, the outbox, a test send.

``export`` writes one YAML file (``destinations:`` and ``rules:``), with no
secret in it: secrets are never read back out of the database.
``import`` reads such a file, every entry checked before anything is
written; a destination that leaves a secret out keeps the stored one (give
it in the file, or later with the API or the page). docs/alerting.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from seclake.cli.options import ConfigFile, DataDir, open_services

app = typer.Typer(help="Notification rules, destinations and deliveries (docs/alerting.md).", no_args_is_help=True)

SHOWN_ONLY = ("secretsSet",)


@app.command("list")
def list_(data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """The destinations (no secrets), the rules and the outbox's counts."""
    alerting = open_services(data_dir, config).alerting
    for d in alerting.destinations():
        secrets = f" (secrets: {', '.join(d['secretsSet'])})" if d["secretsSet"] else ""
        typer.echo(f"destination {d['name']}: {d['kind']} {d.get('url') or ', '.join(d.get('to') or [])}{secrets}")
    for r in alerting.rules():
        state = "" if r.enabled else " (disabled)"
        typer.echo(f"rule {r.name}: on {r.on} -> {', '.join(r.destinations)}, throttle {r.throttleSeconds}s{state}")
    _, counts = alerting.deliveries(None, 1)
    typer.echo("deliveries: " + ", ".join(f"{n} {status}" for status, n in counts.items()))


@app.command("export")
def export(
    path: Annotated[Path, typer.Argument(help="YAML file to write.", show_default=False)],
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Write every destination (without secrets) and rule to one YAML file."""
    alerting = open_services(data_dir, config).alerting
    destinations = [{k: v for k, v in d.items() if k not in SHOWN_ONLY} for d in alerting.destinations()]
    rules = [r.model_dump(exclude_defaults=True) | {"destinations": r.destinations} for r in alerting.rules()]
    path.write_text("# seclake notifications (docs/alerting.md); secrets are not exported.\n"
                    + yaml.safe_dump({"destinations": destinations, "rules": rules}, sort_keys=False,
                                     allow_unicode=True))
    typer.echo(f"exported {len(destinations)} destinations and {len(rules)} rules to {path}")


def _entries(doc: Any, key: str, path: Path) -> list[dict[str, Any]]:
    entries = doc.get(key) or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        typer.echo(f"invalid: {path}: {key} must be a list of objects", err=True)
        raise typer.Exit(1)
    return entries


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="YAML file of destinations: and rules:.", show_default=False)],
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Add or update the destinations and rules of a file; nothing is written if any entry is invalid."""
    from seclake.errors import SeclakeError
    from seclake.model import validated
    from seclake.notify.alertrule import AlertRule
    from seclake.notify.template import check

    if not path.exists():
        typer.echo(f"error: {path}: no such file", err=True)
        raise typer.Exit(2)
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        typer.echo(f"invalid: {path}: {e}", err=True)
        raise typer.Exit(1) from None
    if not isinstance(doc, dict):
        typer.echo(f"invalid: {path}: expected destinations: and rules:", err=True)
        raise typer.Exit(1)
    destinations, raw_rules = _entries(doc, "destinations", path), _entries(doc, "rules", path)
    problems, rules = [], []
    for i, r in enumerate(raw_rules):
        try:
            rule = validated(AlertRule, r, f"rules[{i}]")
            if rule.template is not None:
                check(rule.template, f"rules[{i}].template")
            rules.append(rule)
        except SeclakeError as e:
            problems.append(f"{path}: {e.message}")
    names = [d.get("name") for d in destinations]
    for p in problems:
        typer.echo(f"invalid: {p}", err=True)
    if problems:
        typer.echo(f"{len(problems)} problem(s); nothing imported", err=True)
        raise typer.Exit(1)
    alerting = open_services(data_dir, config).alerting
    try:
        for i, d in enumerate(destinations):
            alerting.put_destination(d, where=f"destinations[{i}]")
        for rule in rules:
            alerting.put_rule(rule)
    except SeclakeError as e:
        typer.echo(f"invalid: {path}: {e.message}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"imported {len(names)} destinations and {len(rules)} rules")


@app.command("test")
def test(
    name: Annotated[str, typer.Argument(help="The destination's name.", show_default=False)],
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Send a test notification to one destination now, and say what happened."""
    from seclake.errors import NotFound

    try:
        outcome = open_services(data_dir, config).alerting.test(name)
    except NotFound as e:
        typer.echo(f"error: {e.message}", err=True)
        raise typer.Exit(2) from None
    if not outcome["sent"]:
        typer.echo(f"failed: {outcome['error']}", err=True)
        raise typer.Exit(1)
    typer.echo(f"sent a test notification to {name}")


@app.command("deliveries")
def deliveries(
    status: Annotated[str | None, typer.Option("--status", help="pending, sent or failed.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many, newest first.")] = 50,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """The outbox, newest first."""
    from seclake.notify.outbox import STATUSES

    if status is not None and status not in STATUSES:
        typer.echo(f"error: --status: one of {', '.join(STATUSES)}", err=True)
        raise typer.Exit(2)
    rows, counts = open_services(data_dir, config).alerting.deliveries(status, limit)
    for r in rows:
        error = f": {r['lastError']}" if r["lastError"] else ""
        typer.echo(f"{r['id']} {r['status']} {r['rule']} -> {r['destination']} ({r['subject']}, "
                   f"{r['attempts']} attempts, {r['folded']} folded){error}")
    typer.echo(", ".join(f"{n} {s}" for s, n in counts.items()))


@app.command("resend")
def resend(
    delivery_id: Annotated[int, typer.Argument(help="The delivery's id.", show_default=False)],
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Make a delivery pending again (the server's sender sends it)."""
    from seclake.errors import NotFound

    try:
        open_services(data_dir, config).alerting.resend(delivery_id)
    except NotFound as e:
        typer.echo(f"error: {e.message}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"delivery {delivery_id} is pending again")
