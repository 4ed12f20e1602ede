"""The ``seclake`` command: one module per command group."""

from __future__ import annotations

import typer

from seclake.cli import config, serve, token, user

app = typer.Typer(help="seclake: self-hosted security analytics query service.", no_args_is_help=True)
app.command("serve")(serve.serve)
app.command("config")(config.config)
app.add_typer(user.app, name="user")
app.add_typer(token.app, name="token")


def main() -> None:
    app()
