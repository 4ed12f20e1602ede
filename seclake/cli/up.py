"""``seclake up``: the newcomer's command, a server with demo data on first start."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir
from seclake.settings import load_settings


def up(
    host: Annotated[str | None, typer.Option(help="Listen address [default: 127.0.0.1].", show_default=False)] = None,
    port: Annotated[int | None, typer.Option(help="Listen port [default: 8080].", show_default=False)] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Run the server; on an empty data dir, load demo data first (setting load_demo)."""
    import uvicorn

    from seclake.api.app import create_app
    from seclake.cli.lake import load_demo_with_progress
    from seclake.services import Services

    settings = load_settings(host=host, port=port, data_dir=data_dir, config=config)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    services = Services(settings)
    app = create_app(settings, services)
    if settings.load_demo:
        services.lake.start(background=False)
        try:
            if services.lake.is_empty():
                totals = load_demo_with_progress(services, settings.demo_days)
                typer.echo(f"loaded {totals['accepted'] + totals['raw']} demo records ({settings.demo_days} days)")
        finally:
            services.lake.stop()
    typer.echo(f"seclake is listening on http://{settings.host}:{settings.port}/ (sign in as admin)")
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level)
