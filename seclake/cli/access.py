"""``seclake policy`` and ``seclake role``: manage access without going through HTTP.

The same rules as the admin calls (seclake.service.policies); every change
is written to the audit log as a call ``cli/<group> <command>`` from client
``cli``, by the operating-system user, with what changed.
"""

from __future__ import annotations

import getpass
from typing import Annotated, Any

import typer

from seclake.cli.options import ConfigFile, DataDir, open_services
from seclake.cli.user import fail
from seclake.errors import SeclakeError
from seclake.service.policies import POLICY_DATASETS, changes
from seclake.services import Services

# seclake.api.reply (pydantic models, ~70 ms to load) is imported by the
# commands that print records, not at the start of every command.

policy_app = typer.Typer(help="Manage data policies (per dataset, a Lucene filter of what a user sees).",
                         no_args_is_help=True)
role_app = typer.Typer(help="Manage custom roles (permissions, API policies, data policies).", no_args_is_help=True)

Filter = Annotated[str | None, typer.Option(help="Lucene filter of the records of this dataset the policy shows.")]
Names = Annotated[list[str] | None, typer.Option(help="Repeatable.")]


def _audited(services: Services, command: str, detail: str) -> None:
    try:
        who = f"cli:{getpass.getuser()}"
    except Exception:  # no login name in some containers
        who = "cli"
    services.audit.call(who, f"cli/{command}", "cli", "OK", 0, 0, detail)
    services.audit.flush()  # the command ends here: write it before the process does


def _run(services: Services, command: str, work) -> Any:
    try:
        result, detail = work()
    except SeclakeError as e:
        raise fail(e) from None
    _audited(services, command, detail)
    return result


# -- policies ------------------------------------------------------------------------


@policy_app.command("add")
def policy_add(
    name: str,
    event: Filter = None,
    flow: Filter = None,
    behavior: Filter = None,
    summary: Filter = None,
    audit: Filter = None,
    description: str = "",
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Add a data policy; a dataset given no filter shows nothing (use '*' for all of it)."""
    from seclake.api import reply
    services = open_services(data_dir, config)
    given = {"event": event, "flow": flow, "behavior": behavior, "summary": summary, "audit": audit}
    filters = {k: v for k, v in given.items() if v is not None}

    def work():
        added = reply.policy_record(services.policies.add_policy(
            {"name": name, "description": description, "filters": filters}))
        return added, f"data policy {name!r} added: " + changes(None, added, ("description", "filters"))

    _run(services, "policy add", work)
    typer.echo(f"added data policy {name}")


@policy_app.command("list")
def policy_list(data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """List data policies: name, then dataset=filter for each dataset named."""
    services = open_services(data_dir, config)
    for p in services.policies.list_policies():
        filters = "\t".join(f"{k}={p.filters[k]}" for k in POLICY_DATASETS if k in p.filters)
        typer.echo(f"{p.name}\t{filters}\t{p.description}")


@policy_app.command("delete")
def policy_delete(name: str, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Delete a data policy (refused while a user, role or token uses it)."""
    services = open_services(data_dir, config)
    _run(services, "policy delete", lambda: (services.policies.delete_policy(name), f"data policy {name!r} deleted"))
    typer.echo(f"deleted data policy {name}")


def _change_user(services: Services, command: str, username: str, field: str, edit) -> dict[str, Any]:
    from seclake.api import reply

    def work():
        before = reply.user_record(services.users.get(username))
        current = list(before[field] or [])
        after = reply.user_record(services.users.update({"username": username, field: edit(current)}))
        return after, f"user {username!r}: " + changes(before, after, (field,))

    return _run(services, command, work)


@policy_app.command("attach")
def policy_attach(username: str, names: list[str], data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Attach data policies to a user (the user then sees only what they show)."""
    services = open_services(data_dir, config)
    after = _change_user(services, "policy attach", username, "dataPolicies",
                         lambda cur: cur + [n for n in names if n not in cur])
    typer.echo(f"{username}: data policies {', '.join(after['dataPolicies'] or []) or 'none'}")


@policy_app.command("detach")
def policy_detach(username: str, names: list[str], data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Detach data policies from a user (with none left, the user's roles decide)."""
    services = open_services(data_dir, config)
    after = _change_user(services, "policy detach", username, "dataPolicies",
                         lambda cur: [n for n in cur if n not in names] or None)
    typer.echo(f"{username}: data policies {', '.join(after['dataPolicies'] or []) or 'none'}")


# -- roles -----------------------------------------------------------------------------


@role_app.command("add")
def role_add(
    name: str,
    permission: Annotated[list[str] | None, typer.Option("--permission", help="search, triage, ingest, admin (repeatable).")] = None,
    api: Annotated[list[str] | None, typer.Option("--api", help="Allowed call-name glob, like 'ds/*' (repeatable).")] = None,
    policy: Annotated[list[str] | None, typer.Option("--policy", help="Data policy name (repeatable).")] = None,
    description: str = "",
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Add a custom role."""
    from seclake.api import reply
    services = open_services(data_dir, config)
    fields = ("description", "permissions", "APIPolicies", "dataPolicies")

    def work():
        added = reply.role_record(services.policies.add_role({
            "name": name, "description": description, "permissions": permission or [],
            "APIPolicies": api or [], "dataPolicies": policy or []}))
        return added, f"role {name!r} added: " + changes(None, added, fields)

    _run(services, "role add", work)
    typer.echo(f"added role {name}")


@role_app.command("list")
def role_list(data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """List roles: name, permissions, API policies, data policies."""
    services = open_services(data_dir, config)
    for r in services.policies.list_roles():
        kind = "built-in" if r.built_in else "custom"
        typer.echo(f"{r.name}\t{kind}\t{','.join(r.permissions)}\tapi={','.join(r.api_policies) or '-'}\t"
                   f"data={','.join(r.data_policies) or '-'}")


@role_app.command("delete")
def role_delete(name: str, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Delete a custom role (refused while a user holds it)."""
    services = open_services(data_dir, config)
    _run(services, "role delete", lambda: (services.policies.delete_role(name), f"role {name!r} deleted"))
    typer.echo(f"deleted role {name}")


@role_app.command("grant")
def role_grant(username: str, role: str, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Give a user a role."""
    services = open_services(data_dir, config)
    after = _change_user(services, "role grant", username, "roles", lambda cur: cur + ([role] if role not in cur else []))
    typer.echo(f"{username}: roles {', '.join(after['roles'])}")


@role_app.command("revoke")
def role_revoke(username: str, role: str, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Take a role away from a user (a user keeps at least one role)."""
    services = open_services(data_dir, config)
    after = _change_user(services, "role revoke", username, "roles", lambda cur: [r for r in cur if r != role])
    typer.echo(f"{username}: roles {', '.join(after['roles'])}")
