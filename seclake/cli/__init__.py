"""The ``seclake`` command: one module per command group."""

from __future__ import annotations

import typer

from seclake.cli import access, bench, cluster, config, lake, rules, serve, status, token, user

app = typer.Typer(help="seclake: self-hosted security analytics query service.", no_args_is_help=True)
app.command("serve")(serve.serve)
app.command("up")(serve.up)
app.command("status")(status.status)
app.command("config")(config.config)
app.command("import")(lake.import_files)
app.command("demo")(lake.demo)
app.command("retention")(lake.retention)
app.command("backup")(lake.backup)
app.add_typer(user.app, name="user")
app.add_typer(token.app, name="token")
app.add_typer(rules.app, name="rules")
app.add_typer(access.policy_app, name="policy")
app.add_typer(access.role_app, name="role")
app.command("bench")(bench.bench)
app.command("searcher")(cluster.searcher)
app.add_typer(cluster.cluster_app, name="cluster")


def main() -> None:
    app()
