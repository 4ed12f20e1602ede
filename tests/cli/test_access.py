"""``seclake policy`` and ``seclake role``: add, list, attach, delete; refusals; audit."""

from __future__ import annotations

from seclake.services import Services
from seclake.settings import load_settings
from tests.cli.command import run


def test_policy_and_role_commands(tmp_path) -> None:
    d = ["--data-dir", str(tmp_path)]
    assert run("user", "add", "ana", "--role", "analyst", *d, input="ana-password-1\nana-password-1\n").exit_code == 0
    added = run("policy", "add", "acme", "--event", "@customer:acme", "--summary", "customer:acme", *d)
    assert added.exit_code == 0, added.output
    bad = run("policy", "add", "broken", "--event", "@customer:(acme", *d)
    assert bad.exit_code == 1 and "filters.event: query error at position" in bad.output
    assert "acme\tevent=@customer:acme\tsummary=customer:acme" in run("policy", "list", *d).output

    role = run("role", "add", "acme-reader", "--permission", "search", "--api", "ds/*", "--policy", "acme", *d)
    assert role.exit_code == 0, role.output
    assert "acme-reader\tcustom\tpublic,search\tapi=ds/*\tdata=acme" in run("role", "list", *d).output
    assert "roles analyst, acme-reader" in run("role", "grant", "ana", "acme-reader", *d).output
    assert "data policies acme" in run("policy", "attach", "ana", "acme", *d).output

    in_use = run("policy", "delete", "acme", *d)
    assert in_use.exit_code == 1 and "in use by users ana; roles acme-reader" in in_use.output
    assert run("role", "delete", "acme-reader", *d).exit_code == 1
    assert "roles analyst" in run("role", "revoke", "ana", "acme-reader", *d).output
    assert "data policies none" in run("policy", "detach", "ana", "acme", *d).output
    assert run("role", "delete", "acme-reader", *d).exit_code == 0
    assert run("policy", "delete", "acme", *d).exit_code == 0
    assert run("policy", "list", *d).output.strip() == ""

    services = Services(load_settings(data_dir=tmp_path))
    try:
        entries = [e for e in services.audit.recent() if e["client"] == "cli"]
    finally:
        services.stop()
    calls = [e["call"] for e in entries][::-1]
    assert calls == ["cli/policy add", "cli/role add", "cli/role grant", "cli/policy attach", "cli/role revoke",
                     "cli/policy detach", "cli/role delete", "cli/policy delete"]
    assert any("roles: [analyst] -> [analyst, acme-reader]" in (e["detail"] or "") for e in entries)
