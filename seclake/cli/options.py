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
    services = Services(load_settings(data_dir=data_dir, config=config))
    generated = services.prepare()
    if generated:
        from seclake.api.app import announce_admin_password

        announce_admin_password(generated)
    return services
