"""``seclake user``: manage users without going through HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir, open_services
from seclake.errors import SeclakeError
from seclake.service.clock import iso
from seclake.model import validated

app = typer.Typer(help="Manage users.", no_args_is_help=True)

Password = Annotated[
    str,
    typer.Option(prompt=True, hide_input=True, confirmation_prompt=True, envvar="SECLAKE_NEW_PASSWORD",
                 help="Password (prompted when not given; env SECLAKE_NEW_PASSWORD)."),
]


def fail(error: SeclakeError) -> typer.Exit:
    typer.echo(f"error: {error}", err=True)
    return typer.Exit(1)


@app.command("add")
def add(
    username: str,
    password: Password,
    role: Annotated[list[str] | None, typer.Option("--role", help="Role (repeatable): admin, analyst, ingest.")] = None,
    email: str = "",
    first_name: str = "",
    last_name: str = "",
    organization: str = "",
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Add a user (role analyst unless --role is given)."""
    services = open_services(data_dir, config)
    try:
        services.users.add({
            "username": username, "password": password, "roles": role or ["analyst"], "email": email,
            "firstName": first_name, "lastName": last_name, "organization": organization,
        })
    except SeclakeError as e:
        raise fail(e) from None
    typer.echo(f"added user {username}")


@app.command("list")
def list_users(data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """List users."""
    services = open_services(data_dir, config)
    for u in services.users.list():
        state = "disabled" if u.disabled else "enabled"
        typer.echo(f"{u.username}\t{','.join(u.roles)}\t{state}\t{u.email}\tlast login {iso(u.last_login) or 'never'}")


@app.command("passwd")
def passwd(username: str, password: Password, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Set a user's password."""
    services = open_services(data_dir, config)
    try:
        services.users.set_password(username, password)
    except SeclakeError as e:
        raise fail(e) from None
    typer.echo(f"password of {username} changed (its sessions ended, its lockouts cleared)")


@app.command("unlock")
def unlock(username: str, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """End a username's lockouts after failed logins, from every address."""
    services = open_services(data_dir, config)
    try:
        from seclake.api.request import UsernameRequest  # the API's models: ~12 ms every command would pay

        ended = services.login.unlock(validated(UsernameRequest, {"username": username}).username)
    except SeclakeError as e:
        raise fail(e) from None
    typer.echo(f"unlocked {username} ({ended} lockout counter(s) cleared)")


@app.command("disable")
def disable(
    username: str,
    enable: Annotated[bool, typer.Option("--enable", help="Enable the user again instead.")] = False,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Disable a user (its sessions and tokens stop working at once)."""
    services = open_services(data_dir, config)
    try:
        services.users.set_disabled(username, not enable)
    except SeclakeError as e:
        raise fail(e) from None
    typer.echo(f"{'enabled' if enable else 'disabled'} user {username}")
