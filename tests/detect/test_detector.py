"""Streaming detection: behaviors logged with their records, history and
windows exact across restarts and crashes, backfill equal to streaming."""

from __future__ import annotations

import time

import pytest

from seclake.detect.rule import rule_from_dict
from seclake.detect.scorelevel import DEFAULT_BANDS
from seclake.service.backfill import backfill
from seclake.services import Services
from seclake.settings import load_settings

T0 = 1_763_683_200_000

FAILED = {
    "name": "ssh-failed",
    "behavior": "Failed Login",
    "description": "A failed SSH login",
    "query": '"failed password"',
    "keyField": "src",
    "keyType": "ip",
    "attributes": [{"field": "user", "aliase": "User"}],
    "risks": ["T1110"],
    "riskScore": 100,
}
BRUTE = {
    "name": "ssh-brute",
    "behavior": "Brute Force",
    "description": "Many failed SSH logins from one address",
    "query": '"failed password"',
    "keyField": "src",
    "keyType": "ip",
    "risks": ["T1110.001"],
    "riskScore": 3000,
    "threshold": {"function": "count", "window": "5m", "value": 5},
}


def failed(i: int, src: str = "203.0.113.7", user: str = "admin", dt: int = 1000) -> tuple[str, dict]:
    return ("event", {"@timestamp": T0 + i * dt, "@message": f"Failed password for {user} from {src}",
                      "@customer": "acme", "@fields": {"src": src, "user": user}})


class Rig:
    """A real Services (lake, rule book, detector, summaries) on its own data dir."""

    def __init__(self, data_dir, rules=(FAILED, BRUTE), commit_interval=60.0, keep_starter=False):
        self.services = Services(load_settings(data_dir=data_dir, admin_password="admin-test-password",
                                               commit_interval_seconds=commit_interval, retention_days=0))
        self.services.prepare()
        book = self.services.rules
        for r in book.rules():
            if not keep_starter and r.name not in {x["name"] for x in rules}:
                book.delete(r.name)
        for r in rules:
            if book.get_or_none(r["name"]) is None:
                book.add(rule_from_dict(r))
        self.services.start()
        self.lake = self.services.lake
        self.ingestion = self.services.ingestion
        self.book = book

    def behaviors(self) -> list[dict]:
        self.lake.flush()
        out = [r for s in self.lake.splits("behavior") for r in s.all_records()]
        return [r.source for r in sorted(out, key=lambda r: r.docid)]

    def stop(self) -> None:
        self.services.stop()

    def crash(self) -> None:
        """End as a kill -9 would: nothing more saved, indexed or flushed."""
        for component in self.services.components:
            stop = getattr(component, "_stop", None)
            if hasattr(stop, "set"):
                stop.set()
        self.lake.abandon()
        self.services.db.dispose()


@pytest.fixture
def rigs(tmp_path):
    made = []

    def make(name="a", **kw):
        rig = Rig(tmp_path / name, **kw)
        made.append(rig)
        return rig

    yield make
    for rig in made:
        try:
            rig.stop()
        except Exception:
            pass


def test_behaviors_have_every_field_and_history_flags(rigs):
    rig = rigs(rules=(FAILED,))
    rig.ingestion.append_records([failed(0), failed(1), failed(2, src="198.51.100.9")])
    b = rig.behaviors()
    assert len(b) == 3
    fields = {"sequence", "timestamp", "key", "originalKey", "keyType", "originalKeyType", "description",
              "behaviorRule", "behavior", "riskScore", "attributes", "risks", "ruleRisks", "ruleHits",
              "scoreLevel", "customer", "history", "keyContext"}
    assert fields <= set(b[0])
    assert b[0]["key"] == "203.0.113.7" and b[0]["keyType"] == "ip" and b[0]["customer"] == "acme"
    assert b[0]["attributes"] == [{"key": "user", "aliase": "User", "value": "admin"}]
    assert b[0]["ruleHits"] == [{"name": "ssh-failed", "scope": "global", "risks": ["T1110"]}]
    # Behavior numbers and record ids are opaque (a keyed permutation of the
    # global counters), unique, and name the record that fired the rule.
    ids = rig.services.record_ids
    assert [x["sequence"] for x in b] == [ids.number(n) for n in (1, 2, 3)]
    assert len({x["sequence"] for x in b}) == 3 and [x["sequence"] for x in b] != [1, 2, 3]
    assert all(ids.sequence(int(x["eventId"], 16)) < ids.sequence(int(y["eventId"], 16)) for x, y in zip(b, b[1:]))
    assert b[0]["history"] == {"BehaviorFirstSeen": True, "KeyFirstSeen": True, "KeyBehaviorFirstSeen": True, "ReOccurrence": False}
    assert b[1]["history"] == {"BehaviorFirstSeen": False, "KeyFirstSeen": False, "KeyBehaviorFirstSeen": False, "ReOccurrence": True}
    assert b[2]["history"] == {"BehaviorFirstSeen": False, "KeyFirstSeen": True, "KeyBehaviorFirstSeen": True, "ReOccurrence": False}


def test_each_customer_has_its_own_windows_and_history(rigs, tmp_path):
    """9 globex failures and 1 acme failure from one address made an acme
    brute-force behavior, and one customer's history showed in another's
    first-seen flags (issue 17, point 7)."""
    rig = rigs(rules=(FAILED, BRUTE))
    globex = [("event", {**r, "@customer": "globex"}) for _, r in (failed(i) for i in range(4))]
    rig.ingestion.append_records(globex + [failed(4)])  # 4 globex + 1 acme: the threshold is 5
    b = rig.behaviors()
    assert [x["behaviorRule"] for x in b].count("ssh-brute") == 0
    acme = [x for x in b if x["customer"] == "acme"]
    # acme's first failure is the first acme has seen, whatever globex saw before.
    assert acme[0]["history"] == {"BehaviorFirstSeen": True, "KeyFirstSeen": True, "KeyBehaviorFirstSeen": True,
                                  "ReOccurrence": False}
    # Its own four more make five: now it fires, for acme.
    rig.ingestion.append_records([failed(i) for i in range(5, 9)])
    brute = [x for x in rig.behaviors() if x["behaviorRule"] == "ssh-brute"]
    assert [x["customer"] for x in brute] == ["acme"]
    # Saved and restored per customer: after a restart globex's four still
    # count, and its fifth fires for globex alone.
    rig.services.detector.save()
    rig.stop()
    again = rigs(name="a", rules=(FAILED, BRUTE))
    assert "globex" in {c for _, c, _ in again.services.detector.windows}
    again.ingestion.append_records([("event", {**failed(20)[1], "@customer": "globex"})])
    after = [x["customer"] for x in again.behaviors() if x["behaviorRule"] == "ssh-brute"]
    assert after == ["acme", "globex"]


def test_threshold_fires_once_per_burst(rigs):
    rig = rigs(rules=(BRUTE,))
    rig.ingestion.append_records([failed(i) for i in range(12)])
    b = rig.behaviors()
    assert [x["behaviorRule"] for x in b] == ["ssh-brute", "ssh-brute"]  # at the 5th and the 10th failure
    assert "count reached 5" in b[0]["description"]
    # Spread over more than the window, failures never add up to a behavior.
    rig.ingestion.append_records([failed(100 + i, src="192.0.2.1", dt=120_000) for i in range(8)])
    assert len(rig.behaviors()) == 2


def test_history_and_windows_survive_a_restart(rigs):
    rig = rigs()
    rig.ingestion.append_records([failed(i) for i in range(3)])
    rig.stop()
    again = rigs()
    again.ingestion.append_records([failed(3 + i) for i in range(2)])
    b = again.behaviors()
    brute = [x for x in b if x["behaviorRule"] == "ssh-brute"]
    assert len(brute) == 1, "3 failures before the restart and 2 after make 5 in the window"
    fails = [x for x in b if x["behaviorRule"] == "ssh-failed"]
    assert fails[-1]["history"]["ReOccurrence"] is True
    # Shown sequences are opaque; behind them, the counter went on where it stopped.
    made = [again.services.record_ids.sequence(x["sequence"]) for x in b]
    assert made == sorted(made) and len(set(made)) == len(b)


def test_a_crash_before_the_state_is_saved_loses_nothing(rigs):
    rig = rigs()
    rig.ingestion.append_records([failed(i) for i in range(4)])
    rig.crash()  # nothing saved, nothing indexed
    again = rigs()
    again.ingestion.append_records([failed(4)])
    b = again.behaviors()
    assert [x["behaviorRule"] for x in b].count("ssh-failed") == 5
    assert [x["behaviorRule"] for x in b].count("ssh-brute") == 1
    assert [again.services.record_ids.sequence(x["sequence"]) for x in b] == list(range(1, 7))


def _essence(rig, b: dict) -> tuple:
    # Each rig has its own id key: compare the sequences behind the shown ones.
    return (b["behaviorRule"], b["key"], b["timestamp"], tuple(sorted(b["history"].items())),
            tuple((a["key"], a["value"]) for a in b["attributes"]), b["description"],
            rig.services.record_ids.sequence(b["sequence"]))


def test_backfill_gives_the_behaviors_streaming_gives(rigs):
    from seclake.demo.generator import generate
    from seclake.ingest.parser import parse_line

    now = int(time.time() * 1000)
    items = []
    for line in generate(days=1, end_ms=now, events_per_day=3000):
        parsed = parse_line(line.line, vendor=line.vendor, dataset=line.dataset, received_ms=now)
        if parsed:
            items.append((line.dataset, parsed[0]))
    # The shipped starter pack, streaming and then as a backfill.
    streaming = rigs("streaming", rules=(), keep_starter=True)
    starter = [r.to_dict() for r in streaming.book.rules()]
    assert starter, "the starter pack is installed on first start"
    for i in range(0, len(items), 1000):
        streaming.ingestion.append_records(items[i:i + 1000])
    streamed = streaming.behaviors()
    # Threshold rules (brute force, port scan) and plain ones both fired.
    assert len({b["behaviorRule"] for b in streamed}) >= 4

    quiet = rigs("backfill", rules=())
    for i in range(0, len(items), 1000):
        quiet.ingestion.append_records(items[i:i + 1000])
    assert quiet.behaviors() == []
    for r in starter:
        quiet.book.add(rule_from_dict(r))
    report = backfill(quiet.ingestion, quiet.book, DEFAULT_BANDS, None, None, quiet.services.record_ids)
    filled = quiet.behaviors()
    assert report["behaviors"] == len(filled) == len(streamed)
    assert [_essence(quiet, b) for b in filled] == [_essence(streaming, b) for b in streamed]


def test_threshold_windows_are_bounded_oldest_first_and_exact_across_a_restart(rigs, monkeypatch):
    from seclake.detect import detector as detector_module

    # A bound of 10 live windows: past it, down to 9 (EVICT_TO).
    monkeypatch.setattr(detector_module, "MAX_WINDOWS", 10)
    rig = rigs(rules=(BRUTE,))
    # 30 sources, one failure each, a second apart: 30 windows of one entry.
    sources = [f"198.51.100.{i}" for i in range(30)]
    rig.ingestion.append_records([failed(i, src=s) for i, s in enumerate(sources)])
    det = rig.services.detector
    kept = {key for _rule, _customer, key in det.windows}
    assert det.live_windows() <= 10 and len(kept) == det.live_windows()
    assert det.windows_evicted == 30 - len(kept)
    # The newest keys stay, the oldest went.
    assert kept == set(sources[30 - len(kept):])
    rig.stop()

    again = rigs(rules=(BRUTE,))
    assert {key for _r, _c, key in again.services.detector.windows} == kept, "the table kept only the bounded set"
    # A kept key needs 4 more failures to make 5; an evicted one starts over and does not fire on 4.
    recent, dropped = sources[-1], sources[0]
    again.ingestion.append_records([failed(30 + i, src=s) for i in range(4) for s in (recent, dropped)])
    brute = [b for b in again.behaviors() if b["behaviorRule"] == "ssh-brute"]
    assert [b["key"] for b in brute] == [recent]
    text = again.services.metrics.registry
    from prometheus_client import generate_latest

    scraped = generate_latest(text).decode()
    assert "seclake_detector_windows " in scraped and "seclake_detector_windows_evicted_total" in scraped


def test_backfill_gives_the_behaviors_streaming_gives_with_windows_evicted(rigs, monkeypatch):
    """Eviction is decided by the records in log order: a backfill evicts as streaming did."""
    from seclake.detect import detector as detector_module

    monkeypatch.setattr(detector_module, "MAX_WINDOWS", 6)
    items = []
    for i in range(400):
        # Two busy sources fire again and again; every third record comes from
        # a source seen once, whose windows push the oldest out.
        src = f"10.9.{i // 256}.{i % 256}" if i % 3 == 0 else f"203.0.113.{i % 3}"
        items.append(failed(i, src=src, dt=3000))
    streaming = rigs("streaming", rules=(FAILED, BRUTE))
    for i in range(0, len(items), 50):
        streaming.ingestion.append_records(items[i:i + 50])
    streamed = streaming.behaviors()
    assert streaming.services.detector.windows_evicted > 0, "the bound was reached"
    assert any(b["behaviorRule"] == "ssh-brute" for b in streamed)

    quiet = rigs("backfill", rules=())
    for i in range(0, len(items), 50):
        quiet.ingestion.append_records(items[i:i + 50])
    for r in (FAILED, BRUTE):
        quiet.book.add(rule_from_dict(r))
    backfill(quiet.ingestion, quiet.book, DEFAULT_BANDS, None, None, quiet.services.record_ids)
    filled = quiet.behaviors()
    assert [_essence(quiet, b) for b in filled] == [_essence(streaming, b) for b in streamed]


def test_a_history_bigger_than_memory_gives_the_flags_of_one_that_fits_across_a_restart(rigs, monkeypatch):
    """Past its bound the history keeps the keys used last in memory and asks
    the database for the others: the flags are the same as with everything in memory."""
    from seclake.detect import detector as detector_module

    # Sources come back after many others came between: at a bound of 4 they left memory.
    items = [failed(i, src=f"198.51.100.{(i * 7) % 40}", dt=400_000) for i in range(160)]
    whole = rigs("whole", rules=(FAILED,))
    whole.ingestion.append_records(items)
    want = [_essence(whole, b) for b in whole.behaviors()]

    monkeypatch.setattr(detector_module, "HISTORY_CAPACITY", 4)
    small = rigs("small", rules=(FAILED,))
    for i in range(0, 100, 10):
        small.ingestion.append_records(items[i:i + 10])
        small.services.detector.save()
    assert small.services.detector.history.dropped > 0
    small.stop()
    again = rigs("small", rules=(FAILED,))
    again.ingestion.append_records(items[100:])
    got = [_essence(again, b) for b in again.behaviors()]
    assert got == want
    assert sum(dict(b[3])["KeyFirstSeen"] for b in got) == 40  # each source new once, then seen again
    from prometheus_client import generate_latest

    assert "seclake_detector_history_dropped_total" in generate_latest(again.services.metrics.registry).decode()



# -- correlation rules (detect/correlation.py) ---------------------------------------------

QUIET_FAILED = {**FAILED, "generate": False}
LOGIN = {"name": "ssh-login", "behavior": "Login", "query": '"accepted password"', "keyField": "src",
         "keyType": "ip", "riskScore": 10, "generate": False}
SPRAY = {"name": "spray", "behavior": "Password Spray", "description": "Many users tried from one address",
         "riskScore": 5000, "risks": ["T1110.003"],
         "correlation": {"type": "value_count", "rules": ["ssh-failed"], "groupBy": ["src"], "timespan": "5m",
                         "condition": {"gte": 3, "field": "user"}}}
GUESSED = {"name": "guessed", "behavior": "Password Guessed", "riskScore": 8000,
           "correlation": {"type": "temporal_ordered", "rules": ["ssh-failed", "ssh-login"],
                           "groupBy": ["src", "user"], "timespan": "5m"}}
QUIET_HOST = {"name": "quiet-host", "behavior": "Few failures", "riskScore": 50,
              "correlation": {"type": "event_count", "rules": ["ssh-failed"], "groupBy": ["src"], "timespan": "1m",
                              "condition": {"lt": 2}}}
CORRELATIONS = (QUIET_FAILED, LOGIN, SPRAY, GUESSED, QUIET_HOST)


def accepted(i: int, src: str = "203.0.113.7", user: str = "admin", dt: int = 1000) -> tuple[str, dict]:
    return ("event", {"@timestamp": T0 + i * dt, "@message": f"Accepted password for {user} from {src}",
                      "@customer": "acme", "@fields": {"src": src, "user": user}})


def test_correlation_rules_fire_per_group_and_their_rules_make_no_behavior_of_their_own(rigs):
    rig = rigs(rules=CORRELATIONS)
    rig.ingestion.append_records([
        failed(0, user="root"), failed(1, user="admin"), accepted(2, user="admin"),   # admin guessed, in order
        failed(3, user="oracle"),                                                     # third user: a spray
        accepted(4, src="198.51.100.9", user="bob"), failed(5, src="198.51.100.9", user="bob"),  # wrong order
    ])
    b = rig.behaviors()
    assert [(x["behaviorRule"], x["key"]) for x in b] == [
        ("guessed", "203.0.113.7 | admin"), ("spray", "203.0.113.7")]
    assert b[0]["attributes"] == [{"key": "src", "aliase": "src", "value": "203.0.113.7"},
                                  {"key": "user", "aliase": "user", "value": "admin"}]
    assert b[0]["keyType"] == "group" and b[1]["keyType"] == "group" and b[1]["risks"] == ["T1110.003"]
    assert "distinct user of ssh-failed: 3, gte 3 within 300s" in b[1]["description"]
    # The record that completed it is named: the accepted login (3rd) for guessed, the 4th for spray.
    ids = rig.services.record_ids
    seqs = [ids.sequence(int(x["eventId"], 16)) for x in b]
    assert seqs[1] - seqs[0] == 1
    # A group of one failure in its minute is judged once a failure comes past that minute
    # (from any address): 198.51.100.9 had one, 203.0.113.7 had three.
    rig.ingestion.append_records([failed(120, src="192.0.2.1")])
    quiet = [x["key"] for x in rig.behaviors() if x["behaviorRule"] == "quiet-host"]
    assert quiet == ["198.51.100.9"]


def test_correlation_groups_survive_a_restart_and_backfill_gives_what_streaming_gives(rigs, monkeypatch):
    from seclake.detect import detector as detector_module

    # A bound of 40 live windows and groups, so eviction happens in both runs.
    monkeypatch.setattr(detector_module, "MAX_WINDOWS", 40)
    items = []
    for i in range(240):
        src = f"203.0.113.{i % 4}" if i % 3 else f"10.9.{i // 256}.{i % 256}"
        items.append(accepted(i, src=src, user=f"u{i % 5}", dt=7000) if i % 7 == 0
                     else failed(i, src=src, user=f"u{i % 5}", dt=7000))
    rules = (*CORRELATIONS, BRUTE)
    streaming = rigs("streaming", rules=rules)
    for i in range(0, 120, 40):
        streaming.ingestion.append_records(items[i:i + 40])
    streaming.services.detector.save()
    streaming.stop()
    streaming = rigs("streaming", rules=rules)  # the rest after a restart: groups come back from the table
    for i in range(120, len(items), 40):
        streaming.ingestion.append_records(items[i:i + 40])
    streamed = streaming.behaviors()
    assert {b["behaviorRule"] for b in streamed} == {"spray", "guessed", "quiet-host", "ssh-brute"}
    assert streaming.services.detector.windows_evicted > 0

    quiet = rigs("backfill", rules=())
    quiet.ingestion.append_records(items)
    for r in rules:
        quiet.book.add(rule_from_dict(r))
    backfill(quiet.ingestion, quiet.book, DEFAULT_BANDS, None, None, quiet.services.record_ids)
    assert [_essence(quiet, b) for b in quiet.behaviors()] == [_essence(streaming, b) for b in streamed]


def test_a_threshold_grouped_by_fields_counts_each_group_apart(rigs):
    per_user = {**BRUTE, "name": "per-user", "threshold": {**BRUTE["threshold"], "value": 3, "groupBy": ["user"]}}
    rig = rigs(rules=(per_user,))
    # 4 failures from one address, 2 users: no user reaches 3. Then a third for alice.
    rig.ingestion.append_records([failed(i, user=("alice", "bob")[i % 2]) for i in range(4)])
    assert rig.behaviors() == []
    rig.ingestion.append_records([failed(5, user="alice"), ("event", {**failed(6)[1], "@fields": {"src": "203.0.113.7"}})])
    b = rig.behaviors()
    assert [(x["behaviorRule"], x["key"]) for x in b] == [("per-user", "203.0.113.7")]
