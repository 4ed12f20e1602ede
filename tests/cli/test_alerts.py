"""``seclake alerts``: export and import of destinations and rules as YAML
(secrets never exported, kept on import), a test send to a real receiver,
the outbox listed and resent."""

from __future__ import annotations

import yaml

from tests.cli.command import run
from tests.notify.receiver import Receiver

SECRET = "whsec-cli-secret-0123456789"


def test_export_import_round_trip_keeps_secrets_out_of_files(tmp_path) -> None:
    receiver = Receiver(secret=SECRET)
    data, source = str(tmp_path / "data"), tmp_path / "alerts.yaml"
    source.write_text(yaml.safe_dump({
        "destinations": [{"name": "hook", "kind": "webhook", "url": receiver.url, "secret": SECRET}],
        "rules": [{"name": "critical", "on": "summary_level", "level": "critical", "destinations": ["hook"]}],
    }))
    imported = run("alerts", "import", str(source), "--data-dir", data)
    assert imported.exit_code == 0, imported.output
    assert "imported 1 destinations and 1 rules" in imported.output
    listed = run("alerts", "list", "--data-dir", data).output
    assert "destination hook: webhook" in listed and "(secrets: secret)" in listed and SECRET not in listed
    assert "rule critical: on summary_level -> hook, throttle 3600s" in listed
    exported = tmp_path / "out.yaml"
    assert run("alerts", "export", str(exported), "--data-dir", data).exit_code == 0
    text = exported.read_text()
    assert SECRET not in text and "critical" in text
    # Imported back without the secret: the stored one is kept (the test send is signed with it).
    assert run("alerts", "import", str(exported), "--data-dir", data).exit_code == 0
    sent = run("alerts", "test", "hook", "--data-dir", data)
    assert sent.exit_code == 0, sent.output
    assert receiver.requests[0]["signed"] is True
    receiver.stop()
    failed = run("alerts", "test", "hook", "--data-dir", data)
    assert failed.exit_code == 1 and "Connect" in failed.output
    assert run("alerts", "test", "nobody", "--data-dir", data).exit_code == 2


def test_an_invalid_entry_imports_nothing(tmp_path) -> None:
    data, source = str(tmp_path / "data"), tmp_path / "alerts.yaml"
    source.write_text(yaml.safe_dump({
        "destinations": [{"name": "hook", "kind": "webhook", "url": "http://127.0.0.1:9/x"}],
        "rules": [{"name": "ok", "destinations": ["hook"]}, {"name": "bad", "destinations": ["hook"], "minScore": -1}],
    }))
    bad = run("alerts", "import", str(source), "--data-dir", data)
    assert bad.exit_code == 1 and "rules[1].minScore" in bad.output and "nothing imported" in bad.output
    assert "destination hook" not in run("alerts", "list", "--data-dir", data).output


def test_deliveries_and_resend(tmp_path) -> None:
    data = str(tmp_path / "data")
    listed = run("alerts", "deliveries", "--data-dir", data)
    assert listed.exit_code == 0 and "0 pending, 0 sent, 0 failed" in listed.output
    assert run("alerts", "deliveries", "--status", "lost", "--data-dir", data).exit_code == 2
    assert run("alerts", "resend", "7", "--data-dir", data).exit_code == 2
