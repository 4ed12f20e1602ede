"""``seclake sso check``: can this server reach its identity providers?

For each provider of the settings (docs/sso.md): its discovery document
(naming the configured issuer), its JWKS (the key ids it signs with), and
the redirect URI to register at the provider. Exit status 0 when every
provider answered, 1 otherwise: an operator's first look when sign-in fails
with "unreachable" or "discovery", before any user tries.
"""

from __future__ import annotations

from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir
from seclake.settings import load_settings

app = typer.Typer(help="Sign-in with identity providers (OpenID Connect): docs/sso.md.", no_args_is_help=True)

Provider = Annotated[
    str | None, typer.Option("--provider", help="Only this provider (its name).", show_default=False),
]


@app.command("check")
def check(provider: Provider = None, data_dir: DataDir = None, config: ConfigFile = None) -> None:
    """Read each provider's discovery document and keys; show the redirect URI to register."""
    from seclake.service.oidc import ProviderState, SignInFailed

    settings = load_settings(data_dir=data_dir, config=config)
    chosen = [p for p in settings.oidc_providers if provider is None or p.name == provider]
    if not chosen:
        typer.echo(f"no identity provider named {provider!r} in the settings (oidc_providers)" if provider
                   else "no identity provider in the settings (oidc_providers; docs/sso.md)")
        raise typer.Exit(1)
    base = settings.public_url.rstrip("/") if settings.public_url else None
    failed = 0
    for config_ in chosen:
        state = ProviderState(config_)
        where = f"{base}/auth/oidc/{config_.name}/callback" if base else (
            f"<the address users reach seclake at>/auth/oidc/{config_.name}/callback (set public_url)")
        typer.echo(f"{config_.name} ({config_.label}): issuer {config_.issuer}")
        try:
            metadata = state.metadata()
            kids = [k.kid or "(no kid)" for k in state.keys().keys]
        except SignInFailed as failure:
            failed += 1
            typer.echo(f"  FAILED ({failure.reason}): {failure}")
        else:
            typer.echo(f"  discovery: ok (authorization {metadata['authorization_endpoint']}, "
                       f"token {metadata['token_endpoint']})")
            typer.echo(f"  signing keys: {', '.join(kids) if kids else 'none usable'}")
            if not kids:
                failed += 1
        typer.echo(f"  redirect URI to register: {where}")
    if failed:
        raise typer.Exit(1)
