"""Options every command shares, and opening the services from them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seclake.services import Services
from seclake.settings import load_settings

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (env SECLAKE_DATA_DIR; default ./data).", show_default=False),
]
ConfigFile = Annotated[
    Path | None,
    typer.Option("--config", help="TOML settings file (env SECLAKE_CONFIG).", show_default=False),
]


def open_services(data_dir: Path | None, config: Path | None) -> Services:
    """Services for a one-shot command: migrated, with the first admin created."""
    services = Services(load_settings(data_dir=data_dir, config=config), one_shot=True)
    generated = services.prepare()
    if generated:
        from seclake.api.app import announce_admin_password

        announce_admin_password(generated, services.users.first_password_file())
    return services


def started_services(data_dir: Path | None, config: Path | None) -> Services:
    """Services with every component running, as in the server (rules run on imports).

    Exits with a clear message when a server already has the data dir's lake, or its
    catalog was altered to name splits seclake never writes.
    """
    from seclake.storage.catalog import CatalogRefused
    from seclake.storage.lake import LakeBusy

    services = open_services(data_dir, config)
    try:
        services.start()
    except (LakeBusy, CatalogRefused) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    return services
