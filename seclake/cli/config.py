"""``seclake config``: print the effective settings, secrets masked."""

from __future__ import annotations

import orjson
import typer

from seclake.cli.options import ConfigFile, DataDir
from seclake.settings import load_settings


def config(data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Print the effective settings as JSON (passwords masked)."""
    settings = load_settings(data_dir=data_dir, config=config)
    typer.echo(orjson.dumps(settings.masked(), option=orjson.OPT_INDENT_2).decode())
