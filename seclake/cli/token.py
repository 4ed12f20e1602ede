"""``seclake token``: manage API tokens without going through HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir, open_services
from seclake.cli.user import fail
from seclake.errors import SeclakeError

# seclake.api.reply (pydantic models, ~70 ms to load) is imported by the
# commands that print records, not at the start of every command.


app = typer.Typer(help="Manage API tokens.", no_args_is_help=True)


@app.command("create")
def create(
    username: str,
    name: Annotated[str, typer.Option(help="A label to tell tokens apart.")] = "",
    expires_in_days: Annotated[float | None, typer.Option(help="Days until the token expires; never by default.")] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Create an API token for a user; the token is printed once, now."""
    from seclake.api import reply
    services = open_services(data_dir, config)
    try:
        view = services.tokens.create(username, {"name": name, "expiresInDays": expires_in_days})
        record = reply.token_record(view, services.clock())
    except SeclakeError as e:
        raise fail(e) from None
    typer.echo(f"token id {record['id']} for {username} (shown only now; keep it safe):", err=True)
    typer.echo(record["token"])


@app.command("list")
def list_tokens(
    username: Annotated[str | None, typer.Argument(help="Only this user's tokens.")] = None,
    revoked: Annotated[bool, typer.Option("--revoked", help="Revoked (deleted) tokens too.")] = False,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """List API tokens (never the tokens themselves); revoked ones only with --revoked."""
    from seclake.api import reply
    services = open_services(data_dir, config)
    now = services.clock()
    for t in (reply.token_record(view, now) for view in services.tokens.list(username, revoked=revoked)):
        typer.echo(
            f"{t['id']}\t{t['username']}\t{t['prefix']}...\t{t['state']}\t{t['name']}\t"
            f"expires {t['expiresOn'] or 'never'}\tlast used {t['lastUsed'] or 'never'}"
        )


@app.command("revoke")
def revoke(token_id: int, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Revoke an API token by id (see `seclake token list`)."""
    services = open_services(data_dir, config)
    try:
        services.tokens.revoke(token_id)
    except SeclakeError as e:
        raise fail(e) from None
    typer.echo(f"revoked token {token_id}")
