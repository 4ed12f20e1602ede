"""``seclake status``: what a running server's /healthz and /readyz say.

Exit status 0 ready, 1 answering but not ready (with the failing checks), 2
not answering: usable as is by scripts and service managers.
"""

from __future__ import annotations

from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir
from seclake.settings import load_settings

Url = Annotated[
    str | None,
    typer.Option("--url", help="The server's base URL (default: from the settings' host and port).", show_default=False),
]


def status(url: Url = None, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Show whether the server is alive and ready to serve complete answers."""
    import httpx  # here: every command loads this module, and only this one needs it (~25 ms)

    if url is None:
        settings = load_settings(data_dir=data_dir, config=config)
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
        url = f"http://{host}:{settings.port}"
    url = url.rstrip("/")
    try:
        alive = httpx.get(f"{url}/healthz", timeout=10)
        ready = httpx.get(f"{url}/readyz", timeout=30)
    except httpx.HTTPError as e:
        typer.echo(f"{url}: does not answer ({type(e).__name__}: {e})")
        raise typer.Exit(2)
    if alive.status_code != 200:
        typer.echo(f"{url}: /healthz answered {alive.status_code}")
        raise typer.Exit(2)
    try:
        body = ready.json()
    except ValueError:
        typer.echo(f"{url}: /readyz answered {ready.status_code} without a JSON body")
        raise typer.Exit(2)
    typer.echo(f"{url}: {body.get('status', '?')}")
    for check in body.get("checks", []):
        mark = "ok  " if check.get("ok") else "FAIL"
        typer.echo(f"  {mark} {check.get('name')}: {check.get('detail')}")
    raise typer.Exit(0 if ready.status_code == 200 else 1)
