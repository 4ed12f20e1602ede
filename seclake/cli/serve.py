"""``seclake serve``: run the HTTP server."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir
from seclake.settings import load_settings


def serve(
    host: Annotated[str | None, typer.Option(help="Listen address [default: 127.0.0.1].", show_default=False)] = None,
    port: Annotated[int | None, typer.Option(help="Listen port [default: 8080].", show_default=False)] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Run the HTTP server (creates the data dir and the first admin as needed)."""
    import uvicorn

    from seclake.api.app import create_app

    settings = load_settings(host=host, port=port, data_dir=data_dir, config=config)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level)
