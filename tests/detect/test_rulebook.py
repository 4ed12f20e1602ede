"""The rule book in the database: changes, versions, two nodes, first start, export and import;
and the starter pack on demo data.

Every test runs on SQLite and on PostgreSQL (the ``db`` and ``database_url``
fixtures); two ``Database`` objects on one database stand for two API nodes.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import update

from seclake.db.database import Database
from seclake.db.models import StoredRule
from seclake.demo import scenario
from seclake.demo.generator import generate
from seclake.detect.rule import Rule, load_rule_file, rule_from_dict
from seclake.detect.detector import Detector
from seclake.detect.rulebook import RuleBook, check_name, read_rule_files, rule_yaml, starter_pack
from seclake.detect.signal import Window
from seclake.errors import Conflict, NotFound, ValidationFailed
from seclake.ingest import parse_line
from seclake.settings import Settings


def make(name: str = "r1", **over: Any) -> Rule:
    d: dict[str, Any] = {
        "name": name, "behavior": "Test", "query": "EventID:4625", "keyField": "IpAddress", "keyType": "ip",
        "risks": ["T1110"], "riskScore": 100,
    }
    d.update(over)
    return rule_from_dict(d)


RULE_TEXT = "name: {name}\nbehavior: B\nquery: 'EventID:1'\nkeyField: k\nkeyType: ip\nriskScore: 1\n"


@pytest.fixture
def book(db: Database) -> RuleBook:
    return RuleBook(db)


@pytest.fixture
def node(database_url: str, db: Database) -> Iterator[Any]:
    """Open another node's view of the same database: its own engine and rule book."""
    opened: list[Database] = []

    def open_node(legacy: Path | None = None) -> RuleBook:
        other = Database(database_url)
        opened.append(other)
        return RuleBook(other, legacy)

    yield open_node
    for other in opened:
        other.dispose()


def test_crud_and_version(book: RuleBook) -> None:
    assert book.load() == [] and book.rules() == []
    v = book.version
    book.add(make("b"))
    book.add(make("a", riskScore=5))
    assert [r.name for r in book.rules()] == ["a", "b"] and book.version == v + 2
    with pytest.raises(Conflict, match="'a' exists already"):
        book.add(make("a"))
    book.update(make("a", riskScore=7))
    assert book.get("a").risk_score == 7 and book.version == v + 3
    with pytest.raises(NotFound):
        book.update(make("zz"))
    book.update(make("a", riskScore=7))
    assert book.version == v + 3  # the same rule again: no change, no new version
    off = book.toggle("a", False)
    assert off.enabled is False and [r.name for r in book.enabled()] == ["b"]
    v = book.version
    assert book.toggle("a", False) == off and book.version == v
    book.delete("b")
    with pytest.raises(NotFound):
        book.get("b")
    with pytest.raises(NotFound):
        book.delete("b")
    assert book.get_or_none("b") is None
    # What was written is what a fresh book (a restart) reads.
    again = RuleBook(book.db)
    assert again.load() == []
    assert again.rules() == book.rules() and again.version == book.version
    assert again.get("a").enabled is False and again.get("a").risk_score == 7


def test_a_change_through_one_node_is_seen_by_another_at_its_next_read(book: RuleBook, node: Any) -> None:
    other = node()
    assert book.load() == [] and other.load() == []
    other.add(make("from-other"))
    assert [r.name for r in book.rules()] == ["from-other"]
    v = book.version
    assert v == other.version
    # Nothing changed: reads cost the counter query only, no reload, same version.
    loads: list[int] = []
    real_load = book.load
    book.load = lambda: loads.append(1) or real_load()  # type: ignore[method-assign]
    assert book.rules() and book.get("from-other") and book.refresh() == [] and book.version == v and not loads
    book.update(make("from-other", riskScore=9))
    assert other.get("from-other").risk_score == 9 and other.version == v + 1
    other.toggle("from-other", False)
    assert book.enabled() == [] and book.version == v + 2
    other.delete("from-other")
    assert book.get_or_none("from-other") is None and book.version == v + 3
    # The detector's path: refresh before a batch brings the change, version says recompile.
    other.add(make("later"))
    assert book.refresh() == [] and book.version == v + 4 and [r.name for r in book.enabled()] == ["later"]


def test_the_detector_applies_another_nodes_change_to_its_next_batch(book: RuleBook, node: Any) -> None:
    detector = Detector(book, None, bands=Settings().score_bands)
    record = {"@timestamp": 1_000, "@type": "event", "@fields": {"EventID": "4625", "IpAddress": "198.51.100.9"}}
    assert detector.process([("event", record)], 1) == []
    other = node()
    other.add(make("from-other"))
    [behavior] = detector.process([("event", record)], 2)
    assert behavior["behaviorRule"] == "from-other" and behavior["key"] == "198.51.100.9"
    other.toggle("from-other", False)
    assert detector.process([("event", record)], 3) == []


def test_matches_found_elsewhere_are_used_only_under_their_rule_generation(book: RuleBook, node: Any) -> None:
    """A parse worker sends the rules each record matches (``RuleSet.matching``), stamped with the
    rules' generation: the detector takes them as they are under that generation, never after a change."""
    detector = Detector(book, None, bands=Settings().score_bands)
    record = {"@timestamp": 1_000, "@type": "event", "@fields": {"EventID": "4625", "IpAddress": "198.51.100.9"}}
    book.add(make("r1"))
    ruleset = detector.ruleset()
    assert ruleset.matching("event", record) == [0]
    # Taken as found: none found, none made (though the record matches).
    assert detector.process([("event", record)], 1, (ruleset.version, {})) == []
    [made] = detector.process([("event", record)], 2, (ruleset.version, {0: [0]}))
    assert made["behaviorRule"] == "r1"
    # Another node disables r1 and adds r2: the worker's finding is of the old rules, so it is not used.
    other = node()
    other.toggle("r1", False)
    other.add(make("r2", keyField="EventID"))
    [made] = detector.process([("event", record)], 3, (ruleset.version, {0: [0]}))
    assert made["behaviorRule"] == "r2" and made["key"] == "4625"
    # A record the worker found no rule for comes as None, with its JSON: matched again, it is read from that.
    old = (ruleset.version, {})
    [made] = detector.process([("event", None)], 4, old, [orjson.dumps(record)])
    assert made["behaviorRule"] == "r2" and made["key"] == "4625"
    # Under the worker's generation it is not read at all.
    current = detector.ruleset()
    assert detector.process([("event", None)], 5, (current.version, {}), [b"not read"]) == []


def test_a_toggle_uses_the_stored_rule_not_a_stale_copy(book: RuleBook, node: Any) -> None:
    other = node()
    book.add(make("r", riskScore=1))
    other.update(make("r", riskScore=2))
    # book has not read since; its toggle must not write riskScore 1 back.
    assert book.toggle("r", False).risk_score == 2
    assert other.get("r").risk_score == 2 and other.get("r").enabled is False


def test_two_nodes_adding_one_name_give_one_rule_and_one_conflict(book: RuleBook, node: Any) -> None:
    books = [book, node()]
    for b in books:
        b.load()
    v = book.version
    for round_ in range(5):
        barrier = threading.Barrier(2)
        outcome: list[str] = []

        def add(b: RuleBook, k: int) -> None:
            barrier.wait()
            try:
                b.add(make(f"same-{round_}", riskScore=k))
                outcome.append("added")
            except Conflict:
                outcome.append("conflict")

        threads = [threading.Thread(target=add, args=(b, k)) for k, b in enumerate(books)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcome) == ["added", "conflict"]
    assert len(book.rules()) == 5 and book.version == v + 5
    assert [r.name for r in books[1].rules()] == [r.name for r in book.rules()]


def test_concurrent_changes_on_two_nodes_keep_every_rule(book: RuleBook, node: Any) -> None:
    books = [book, node()]
    books[0].load()
    v = books[0].version

    def worker(k: int) -> None:
        b = books[k % 2]
        for i in range(5):
            b.add(make(f"w{k}-{i}"))
            b.toggle(f"w{k}-{i}", False)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for b in books:
        assert len(b.rules()) == 20 and len(b.enabled()) == 0 and b.version == v + 40


def test_a_failed_change_leaves_the_old_rule_and_the_old_version(book: RuleBook, monkeypatch: pytest.MonkeyPatch) -> None:
    book.add(make("a", riskScore=1))
    v = book.version

    def crash(generation: Any) -> int:
        raise RuntimeError("crash between the row and the counter")

    monkeypatch.setattr(RuleBook, "_bump", staticmethod(crash))
    with pytest.raises(RuntimeError):
        book.update(make("a", riskScore=2))
    with pytest.raises(RuntimeError):
        book.add(make("b"))
    with pytest.raises(RuntimeError):
        book.import_rules([make("a", riskScore=3), make("c")], replace=True)
    monkeypatch.undo()
    fresh = RuleBook(book.db)
    assert fresh.load() == [] and fresh.rules() == [make("a", riskScore=1)] and fresh.version == v


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", ".hidden", "", "a b", "a\x00b", "a" * 101, "é", "a\\b", "-x"])
def test_bad_names_are_refused(book: RuleBook, name: str) -> None:
    with pytest.raises(ValidationFailed):
        check_name(name)
    for action in (book.get, book.delete, lambda n: book.toggle(n, False)):
        with pytest.raises((ValidationFailed, NotFound)):
            action(name)


def test_a_rule_object_with_a_bad_name_is_not_stored(book: RuleBook) -> None:
    bad = Rule(**{**make("ok").__dict__, "name": "../../evil"})
    for change in (book.add, book.update, lambda r: book.import_rules([r])):
        with pytest.raises(ValidationFailed):
            change(bad)
    assert book.rules() == []


def test_an_invalid_stored_rule_is_reported_and_left_out(book: RuleBook) -> None:
    book.add(make("good"))
    book.add(make("broken"))
    with book.db.session(write=True) as s:
        # As a stored rule could look to a later, stricter version.
        s.execute(update(StoredRule).where(StoredRule.name == "broken").values(document={"name": "broken", "query": "a AND ("}))
    errors = RuleBook(book.db).load()
    assert len(errors) == 1 and errors[0].startswith("stored rule 'broken': "), errors
    fresh = RuleBook(book.db)
    assert [r.name for r in fresh.rules()] == ["good"]
    # Updating it with a valid rule repairs it.
    fresh.update(make("broken"))
    assert RuleBook(book.db).load() == []


# -- first start ---------------------------------------------------------------


def test_first_start_installs_the_starter_pack_once(db: Database, node: Any, tmp_path: Path) -> None:
    shipped = starter_pack()
    assert len(shipped) >= 10
    book = RuleBook(db, tmp_path / "rules")  # no such directory: nothing legacy
    seeded = book.seed()
    assert seeded is not None and seeded.source == "starter" and seeded.count == len(shipped) and seeded.errors == []
    names = {r.name for r in book.rules()}
    assert {"brute-force-source", "port-scan-flow", "credential-dumping", "known-bad-domain"} <= names
    assert {r.name for p in shipped for r in load_rule_file(p)} == names
    book.delete("credential-dumping")
    # A restart (and any other node) seeds nothing: deleted starter rules stay deleted.
    restarted = node(tmp_path / "rules")
    assert restarted.seed() is None and restarted.load() == []
    assert "credential-dumping" not in {r.name for r in restarted.rules()}
    assert len(restarted.rules()) == len(shipped) - 1


def test_first_start_imports_the_legacy_rule_files_once(db: Database, node: Any, tmp_path: Path) -> None:
    legacy = tmp_path / "rules"
    legacy.mkdir()
    (legacy / "mine.yaml").write_text(RULE_TEXT.format(name="mine"))
    (legacy / "pack.yaml").write_text(
        "- {name: x, behavior: B, query: a, keyField: k, keyType: ip, riskScore: 1, enabled: false}\n"
        "- {name: y, behavior: B, query: b, keyField: k, keyType: ip, riskScore: 1}\n"
    )
    (legacy / "bad.yaml").write_text("name: bad\nbehavior: B\nquery: 'a AND ('\nkeyField: k\nkeyType: ip\nriskScore: 1\n")
    (legacy / "zz-twice.yaml").write_text(RULE_TEXT.format(name="mine"))
    (legacy / ".tmp-x.part").write_text("half a rule")
    (legacy / "notes.txt").write_text("not yaml")
    book = RuleBook(db, legacy)
    seeded = book.seed()
    assert seeded is not None and seeded.source == "legacy" and seeded.count == 3
    assert any(e.startswith("rules/bad.yaml line 3: query: query error") for e in seeded.errors), seeded.errors
    assert any("rules/zz-twice.yaml" in e and "defined twice" in e for e in seeded.errors), seeded.errors
    assert [r.name for r in book.rules()] == ["mine", "x", "y"] and [r.name for r in book.enabled()] == ["mine", "y"]
    assert "credential-dumping" not in {r.name for r in book.rules()}  # no starter pack on top
    # After that the directory is not read: a file added there, or removed, changes nothing.
    (legacy / "later.yaml").write_text(RULE_TEXT.format(name="later"))
    (legacy / "mine.yaml").unlink()
    restarted = node(legacy)
    assert restarted.seed() is None and [r.name for r in restarted.rules()] == ["mine", "x", "y"]


def test_an_existing_deployment_keeps_its_rule_files_on_upgrade(
    empty_database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A data dir with rules/ and a database at revision 0008 (rules were files), started by this version."""
    database_url = empty_database_url
    from seclake.services import Services
    from seclake.settings import load_settings

    old = Database(database_url)
    old.upgrade("0008")
    old.dispose()
    rules = tmp_path / "data" / "rules"
    rules.mkdir(parents=True)
    (rules / "mine.yaml").write_text(RULE_TEXT.format(name="mine"))
    (rules / "bad.yaml").write_text("name: bad\nbehavior: B\nquery: 'a AND ('\nkeyField: k\nkeyType: ip\nriskScore: 1\n")
    settings = load_settings(data_dir=tmp_path / "data", database_url=database_url, admin_password="admin-test-password")
    for start in range(2):
        caplog.clear()
        services = Services(settings)
        with caplog.at_level("INFO", logger="seclake"):
            services.prepare()
        try:
            assert [r.name for r in services.rules.rules()] == ["mine"]
        finally:
            services.stop()
        messages = [r.getMessage() for r in caplog.records]
        if start == 0:
            assert any(m.startswith("imported 1 rules from ") and "no longer read" in m for m in messages), messages
            assert any("rules/bad.yaml line 3" in m for m in messages), messages
        else:
            assert not any("imported" in m or "bad.yaml" in m for m in messages), messages


def test_of_two_nodes_starting_at_once_one_seeds(db: Database, node: Any, tmp_path: Path) -> None:
    books = [RuleBook(db, tmp_path / "none"), node(tmp_path / "none")]
    barrier = threading.Barrier(2)
    results: list[Any] = []

    def start(b: RuleBook) -> None:
        barrier.wait()
        results.append(b.seed())

    threads = [threading.Thread(target=start, args=(b,)) for b in books]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r is None for r in results) == [False, True]
    assert len(books[1].rules()) == len(books[0].rules()) == len(starter_pack())


def test_a_book_holding_rules_already_is_only_marked_seeded(book: RuleBook) -> None:
    book.add(make("own"))
    seeded = book.seed()
    assert seeded is not None and seeded.count == 0 and [r.name for r in book.rules()] == ["own"]
    assert book.seed() is None


# -- detection as code -----------------------------------------------------------


def test_export_then_import_round_trips(book: RuleBook, tmp_path: Path) -> None:
    book.seed()
    book.toggle("credential-dumping", False)
    book.add(make("mine", keyPattern="from {} port", description="é ünïcode"))
    before = book.rules()
    written = book.export(tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(f"{r.name}.yaml" for r in before)
    assert [p.name for p in written] == [f"{r.name}.yaml" for r in before]
    # Each file is the format the starter pack uses: one rule, read back by load_rule_file.
    assert load_rule_file(tmp_path / "out" / "mine.yaml") == [book.get("mine")]
    assert (tmp_path / "out" / "mine.yaml").read_text() == rule_yaml(book.get("mine"))
    rules, errors = read_rule_files([tmp_path / "out"])
    assert errors == [] and sorted(rules, key=lambda r: r.name) == before

    v = book.version
    assert book.import_rules(rules) == (0, 0, len(before), 0) and book.version == v  # nothing changed
    book.delete("mine")
    book.add(make("extra"))
    book.toggle("credential-dumping", True)
    v = book.version
    done = book.import_rules(rules)
    assert (done.added, done.updated, done.deleted) == (1, 1, 0) and book.version == v + 1  # one change for all
    assert {r.name for r in book.rules()} == {r.name for r in before} | {"extra"}
    done = book.import_rules(rules, replace=True)
    assert done.deleted == 1 and book.rules() == before


def test_reading_rule_files_reports_every_bad_one(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(RULE_TEXT.format(name="a"))
    (tmp_path / "b.yaml").write_text("name: b\nbehavior: B\nquery: x\nkeyField: k\nkeyType: ip\nriskScore: -5\n")
    (tmp_path / "c.yaml").write_text("name: [unclosed\n")
    single = tmp_path / "elsewhere.yml"
    single.write_text(RULE_TEXT.format(name="a"))
    rules, errors = read_rule_files([tmp_path, single])
    assert [r.name for r in rules] == ["a"]
    assert errors[0].startswith(f"{tmp_path.name}/b.yaml line 6: riskScore"), errors
    assert errors[1].startswith(f"{tmp_path.name}/c.yaml line "), errors
    assert "elsewhere.yml" in errors[2] and "defined twice" in errors[2]


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
    # One rule on the common names, two sources: 57 sshd failures within
    # about 4 minutes (a firing per 10 of them) and 24 Okta failures of a
    # password spray, one per account (so the per-user rule stays quiet on it).
    assert firings["brute-force-source"] == Counter({scenario.BRUTE_FORCE_IP: 5, scenario.SPRAY_IP: 2})
    assert firings["brute-force-user"] == Counter({scenario.BRUTE_FORCE_USER: 5})
    # Then the success: a privileged password login from that external address.
    assert firings["ssh-privileged-password-login"] == Counter({scenario.BRUTE_FORCE_IP: 1})


def test_brute_force_and_port_scan_stay_quiet_on_background_traffic(firings: dict[str, Counter[str]]) -> None:
    # Background traffic holds hundreds of failed logins and thousands of flows
    # and denies; only the episodes' keys may fire.
    assert set(firings["brute-force-source"]) == {scenario.BRUTE_FORCE_IP, scenario.SPRAY_IP}
    assert set(firings["brute-force-user"]) == {scenario.BRUTE_FORCE_USER}
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
    # The rule is on common names, so sshd's admin login after the brute force counts too.
    assert admin[scenario.BRUTE_FORCE_IP] == 1
    assert all(ip.startswith(("10.", "172.16.")) for ip in admin
               if ip not in (scenario.NEW_ADDRESS_IP, scenario.BRUTE_FORCE_IP))


def test_starter_pack_attributes_and_scores(firings: dict[str, Counter[str]]) -> None:
    rules = {r.name: r for p in starter_pack() for r in load_rule_file(p)}
    # Brute force plus credential dumping on one entity reaches the critical band.
    assert rules["brute-force-source"].risk_score + rules["credential-dumping"].risk_score >= 8000
    assert all(r.risks and all(x.startswith("T") for x in r.risks) for r in rules.values())
    line = (
        "<38>Nov 21 14:07:54 acme-bastion-01 sshd[20311]: Failed password for admin from 203.0.113.7 port 40000 ssh2"
    )
    record, _ = parse_line(line, vendor="sshd", dataset="event", received_ms=END_MS)  # type: ignore[misc]
    rule = rules["brute-force-source"]
    assert rule.matcher()(record) and rule.key_of(record) == "203.0.113.7"
    assert {a["aliase"]: a["value"] for a in rule.attribute_values(record)}["user"] == "admin"


def test_brute_force_fires_on_a_burst_of_windows_4625() -> None:
    # A Winlogbeat event: the rule knows nothing of Windows, the common names carry it.
    rules = {r.name: r for p in starter_pack() for r in load_rule_file(p)}
    rule = rules["brute-force-source"]
    window = Window(rule.threshold)  # type: ignore[arg-type]
    got = []
    for k in range(12):
        line = orjson.dumps({"@timestamp": "2026-11-20T10:00:%02d.000Z" % (k * 4), "winlog": {
            "event_id": 4625, "channel": "Security", "computer_name": "DC01.acme.local",
            "event_data": {"IpAddress": "198.51.100.9", "TargetUserName": f"u{k}", "LogonType": "3"}}}).decode()
        record, _ = parse_line(line, vendor="winlogbeat", dataset="event", received_ms=END_MS)  # type: ignore[misc]
        assert rule.matcher()(record) and rule.key_of(record) == "198.51.100.9", record["@fields"]
        got.append(window.observe(record["@timestamp"], rule.signal_value(record)))
    assert got[9] == 10.0 and got.count(None) == 11
