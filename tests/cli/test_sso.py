"""``seclake sso check`` against a real OpenID provider (tests/service/oidc/provider.mjs)."""

from __future__ import annotations

import json

from tests.cli.command import run
from tests.service.test_oidc import Idp, _need


def test_check_reads_each_providers_discovery_and_keys_and_names_the_redirect_uri(tmp_path) -> None:
    _need()
    idp = Idp(tmp_path)
    config = tmp_path / "seclake.toml"
    provider = idp.provider()
    config.write_text('public_url = "https://seclake.example.com/"\n[[oidc_providers]]\n' + "".join(
        f"{key} = {json.dumps(value)}\n" for key, value in provider.items()))  # strings and lists: TOML as JSON writes them
    data = str(tmp_path / "data")
    idp.start("https://seclake.example.com", kid="key-7")
    try:
        ok = run("sso", "check", "--config", str(config), "--data-dir", data)
        assert ok.exit_code == 0, ok.output
        assert "test (Test IdP): issuer " + idp.issuer in ok.output
        assert "discovery: ok" in ok.output and "signing keys: key-7" in ok.output
        assert "redirect URI to register: https://seclake.example.com/auth/oidc/test/callback" in ok.output
    finally:
        idp.stop()
    down = run("sso", "check", "--provider", "test", "--config", str(config), "--data-dir", data)
    assert down.exit_code == 1 and "FAILED (unreachable): identity provider Test IdP is unreachable" in down.output
    unknown = run("sso", "check", "--provider", "nope", "--config", str(config), "--data-dir", data)
    assert unknown.exit_code == 1 and "no identity provider named 'nope'" in unknown.output
