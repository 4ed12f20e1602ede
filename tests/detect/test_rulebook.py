"""The rule book (files, CRUD, versions, path injection) and the starter pack on demo data."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from seclake.demo import scenario
from seclake.demo.generator import generate
from seclake.detect.rule import Rule, load_rule_file, rule_from_dict
from seclake.detect.rulebook import RuleBook, check_name, starter_pack
from seclake.detect.signal import Window
from seclake.errors import Conflict, NotFound, ValidationFailed
from seclake.ingest import parse_line


def make(name: str = "r1", **over: Any) -> Rule:
    d: dict[str, Any] = {
        "name": name, "behavior": "Test", "query": "EventID:4625", "keyField": "IpAddress", "keyType": "ip",
        "risks": ["T1110"], "riskScore": 100,
    }
    d.update(over)
    return rule_from_dict(d)


@pytest.fixture
def book(tmp_path: Path) -> RuleBook:
    return RuleBook(tmp_path / "rules")


def test_crud_and_version(book: RuleBook) -> None:
    assert book.load() == [] and book.rules() == []
    v = book.version
    book.add(make("b"))
    book.add(make("a", riskScore=5))
    assert [r.name for r in book.rules()] == ["a", "b"] and book.version == v + 2
    assert (book.directory / "a.yaml").is_file()
    with pytest.raises(Conflict, match="'a' exists already"):
        book.add(make("a"))
    book.update(make("a", riskScore=7))
    assert book.get("a").risk_score == 7
    with pytest.raises(NotFound):
        book.update(make("zz"))
    off = book.toggle("a", False)
    assert off.enabled is False and [r.name for r in book.enabled()] == ["b"]
    v = book.version
    assert book.toggle("a", False) is off and book.version == v  # no change, no new version
    book.delete("b")
    assert not (book.directory / "b.yaml").exists()
    with pytest.raises(NotFound):
        book.get("b")
    with pytest.raises(NotFound):
        book.delete("b")
    assert book.get_or_none("b") is None
    # What was written is what a fresh book reads.
    again = RuleBook(book.directory)
    assert again.load() == []
    assert again.rules() == book.rules()
    assert again.get("a").enabled is False and again.get("a").risk_score == 7


def test_writes_are_atomic_and_leave_no_temp_files(book: RuleBook, monkeypatch: pytest.MonkeyPatch) -> None:
    book.add(make("a"))
    before = (book.directory / "a.yaml").read_bytes()

    def fail(*args: Any) -> None:
        raise OSError("disk full")

    # The rename never happens: the old file stays whole and no temp file is left.
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        book.update(make("a", riskScore=9))
    monkeypatch.undo()
    assert (book.directory / "a.yaml").read_bytes() == before
    assert sorted(p.name for p in book.directory.iterdir()) == ["a.yaml"]


def test_leftover_temp_files_are_not_rules(book: RuleBook) -> None:
    book.add(make("a"))
    (book.directory / ".tmp-x.part").write_text("half a rule")
    (book.directory / "notes.txt").write_text("not yaml")
    assert book.load() == [] and [r.name for r in book.rules()] == ["a"]


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", ".hidden", "", "a b", "a\x00b", "a" * 101, "é", "a\\b", "-x"])
def test_path_injection_names_are_refused(book: RuleBook, name: str) -> None:
    with pytest.raises(ValidationFailed):
        check_name(name)
    for action in (book.get, book.delete, lambda n: book.toggle(n, False)):
        with pytest.raises((ValidationFailed, NotFound)):
            action(name)
    assert not any(book.directory.parent.glob("evil*"))


def test_a_rule_object_with_a_bad_name_is_not_written(book: RuleBook) -> None:
    bad = Rule(**{**make("ok").__dict__, "name": "../../evil"})
    with pytest.raises(ValidationFailed):
        book.add(bad)
    assert not (book.directory.parent.parent / "evil.yaml").exists()


def test_invalid_files_are_reported_and_skipped(book: RuleBook) -> None:
    book.add(make("good"))
    (book.directory / "bad.yaml").write_text("name: bad\nbehavior: B\nquery: 'a AND ('\nkeyField: k\nkeyType: ip\nriskScore: 1\n")
    (book.directory / "twice.yaml").write_text(
        "name: good\nbehavior: B\nquery: a\nkeyField: k\nkeyType: ip\nriskScore: 1\n"
    )
    errors = book.load()
    assert [r.name for r in book.rules()] == ["good"]
    assert any(e.startswith("rules/bad.yaml line 3: query: query error") for e in errors), errors
    assert any("rules/twice.yaml" in e and "defined twice" in e for e in errors), errors
    # An invalid file of that name is not overwritten by add.
    with pytest.raises(Conflict):
        book.add(make("bad"))


def test_rules_of_a_shared_hand_written_file_are_not_rewritten(book: RuleBook) -> None:
    book.directory.mkdir(parents=True)
    (book.directory / "pack.yaml").write_text(
        "- {name: x, behavior: B, query: a, keyField: k, keyType: ip, riskScore: 1}\n"
        "- {name: y, behavior: B, query: b, keyField: k, keyType: ip, riskScore: 1}\n"
    )
    (book.directory / "other-name.yaml").write_text("{name: z, behavior: B, query: a, keyField: k, keyType: ip, riskScore: 1}\n")
    assert book.load() == []
    with pytest.raises(Conflict, match="rules/pack.yaml together with 1 other rule"):
        book.toggle("x", False)
    # A rule alone in a file of another name is rewritten in place, never duplicated.
    book.toggle("z", False)
    assert not (book.directory / "z.yaml").exists()
    assert load_rule_file(book.directory / "other-name.yaml")[0].enabled is False
    book.delete("z")
    assert not (book.directory / "other-name.yaml").exists()


def test_concurrent_changes_keep_every_rule(book: RuleBook) -> None:
    def worker(k: int) -> None:
        for i in range(10):
            book.add(make(f"w{k}-{i}"))
            book.toggle(f"w{k}-{i}", False)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(book.rules()) == 40 and book.version == 80
    again = RuleBook(book.directory)
    assert again.load() == [] and len(again.enabled()) == 0 and len(again.rules()) == 40


def test_starter_pack_installs_once(book: RuleBook) -> None:
    shipped = starter_pack()
    assert len(shipped) >= 10
    assert book.install_starter_pack() == len(shipped)
    assert book.load() == []
    names = {r.name for r in book.rules()}
    assert {"ssh-brute-force-source", "port-scan-flow", "credential-dumping", "known-bad-domain"} <= names
    book.delete("credential-dumping")
    assert book.install_starter_pack() == 0  # not on a directory that has rules: deleted stays deleted
    assert book.load() == [] and "credential-dumping" not in {r.name for r in book.rules()}


# -- the starter pack on demo data ------------------------------------------------

DAY_MS = 86_400_000
END_MS = (int(time.time() * 1000) // DAY_MS) * DAY_MS + 12 * 3_600_000


@pytest.fixture(scope="module")
def firings() -> dict[str, Counter[str]]:
    """rule name -> {key: firings} over two days of demo data, as the detector would run it."""
    rules = [r for p in starter_pack() for r in load_rule_file(p)]
    windows: dict[tuple[str, str], Window] = {}
    fired: dict[str, Counter[str]] = {r.name: Counter() for r in rules}
    for d in generate(days=2, end_ms=END_MS):
        parsed = parse_line(d.line, vendor=d.vendor, dataset=d.dataset, received_ms=END_MS, customer=d.customer)
        assert parsed is not None
        record = parsed[0]
        for rule in rules:
            if rule.dataset != d.dataset or not rule.matcher()(record):
                continue
            key = rule.key_of(record)
            if key is None:
                continue
            if rule.threshold is not None:
                window = windows.setdefault((rule.name, key), Window(rule.threshold))
                if window.observe(record["@timestamp"], rule.signal_value(record)) is None:
                    continue
            fired[rule.name][key] += 1
    return fired


def test_brute_force_fires_on_the_attacker_and_the_account(firings: dict[str, Counter[str]]) -> None:
    # 57 failures within about 4 minutes: a firing per 10 of them.
    assert firings["ssh-brute-force-source"] == Counter({scenario.BRUTE_FORCE_IP: 5})
    assert firings["ssh-brute-force-user"] == Counter({scenario.BRUTE_FORCE_USER: 5})
    # Then the success: a privileged password login from that external address.
    assert firings["ssh-privileged-password-login"] == Counter({scenario.BRUTE_FORCE_IP: 1})


def test_brute_force_and_port_scan_stay_quiet_on_background_traffic(firings: dict[str, Counter[str]]) -> None:
    # Background traffic holds hundreds of failed logins and thousands of flows
    # and denies; only the episodes' keys may fire.
    assert set(firings["windows-brute-force-source"]) == set()
    assert set(firings["windows-brute-force-user"]) == set()
    assert set(firings["port-scan-flow"]) == {scenario.SCANNER_IP}
    assert set(firings["port-scan-firewall"]) == {scenario.SCANNER_IP}


def test_port_scan(firings: dict[str, Counter[str]]) -> None:
    # 300 ports in 45 s: 100 distinct ports three times over.
    assert firings["port-scan-flow"][scenario.SCANNER_IP] == 3
    assert firings["port-scan-firewall"][scenario.SCANNER_IP] == 3


def test_bad_domains_exfiltration_credential_dumping_and_admin_address(firings: dict[str, Counter[str]]) -> None:
    m = scenario.manifest(days=2, end_ms=END_MS)
    dns = m.episode("bad_domain_dns")
    assert firings["known-bad-domain"] == Counter({dns.values["client"]: dns.values["queries"]})
    exfil = m.episode("exfiltration")
    assert firings["large-outbound-transfer-flow"] == Counter({exfil.values["src_ip"]: 1})
    assert firings["large-outbound-transfer-firewall"] == Counter({exfil.values["src_ip"]: 1})
    mimikatz = m.episode("mimikatz")
    assert firings["credential-dumping"] == Counter({mimikatz.values["host"]: 2})
    assert firings["encoded-powershell"] == Counter({m.episode("encoded_powershell").values["host"]: 1})
    # Every Administrator logon fires (history marks the new address); the episode's address is among them once.
    admin = firings["admin-login-new-address"]
    assert admin[scenario.NEW_ADDRESS_IP] == 1
    assert all(ip.startswith(("10.", "172.16.")) for ip in admin if ip != scenario.NEW_ADDRESS_IP)


def test_starter_pack_attributes_and_scores(firings: dict[str, Counter[str]]) -> None:
    rules = {r.name: r for p in starter_pack() for r in load_rule_file(p)}
    # Brute force plus credential dumping on one entity reaches the critical band.
    assert rules["ssh-brute-force-source"].risk_score + rules["credential-dumping"].risk_score >= 8000
    assert all(r.risks and all(x.startswith("T") for x in r.risks) for r in rules.values())
    line = (
        "<38>Nov 21 14:07:54 acme-bastion-01 sshd[20311]: Failed password for admin from 203.0.113.7 port 40000 ssh2"
    )
    record, _ = parse_line(line, vendor="sshd", dataset="event", received_ms=END_MS)  # type: ignore[misc]
    rule = rules["ssh-brute-force-source"]
    assert rule.matcher()(record) and rule.key_of(record) == "203.0.113.7"
    assert {a["aliase"]: a["value"] for a in rule.attribute_values(record)}["user"] == "admin"


def test_windows_brute_force_fires_on_a_burst_of_4625() -> None:
    rules = {r.name: r for p in starter_pack() for r in load_rule_file(p)}
    rule = rules["windows-brute-force-source"]
    window = Window(rule.threshold)  # type: ignore[arg-type]
    got = []
    for k in range(12):
        record = {"@timestamp": 1_000_000 + k * 10_000, "@type": "event",
                  "@fields": {"EventID": "4625", "IpAddress": "198.51.100.9", "TargetUserName": f"u{k}"}}
        assert rule.matcher()(record) and rule.key_of(record) == "198.51.100.9"
        got.append(window.observe(record["@timestamp"], rule.signal_value(record)))
    assert got[9] == 10.0 and got.count(None) == 11


def test_rules_written_by_another_book_on_the_same_directory_are_seen_without_a_load(book: RuleBook) -> None:
    """Two API nodes of a cluster share the rules directory; each sees the other's changes."""
    other = RuleBook(book.directory)
    assert book.load() == [] and other.load() == []
    other.add(make("from-other"))
    assert [r.name for r in book.rules()] == ["from-other"]
    v = book.version
    assert book.rules() and book.version == v  # nothing changed: no reload
    book.update(make("from-other", riskScore=9))
    assert other.get("from-other").risk_score == 9
    other.delete("from-other")
    assert book.get_or_none("from-other") is None
    # A hand-edited file is picked up too, and a broken one is left out, not fatal.
    (book.directory / "bad.yaml").write_text("name: [unclosed\n")
    assert book.rules() == [] and book.refresh() == []
