"""First-seen rules (``firstSeen``) on a week of demo data: the starter pack's
"Admin Login From New Address" fires once per (address, user), ever."""

from __future__ import annotations

import pytest

from seclake.demo import manifest
from seclake.demo.generator import generate
from seclake.detect.rule import rule_from_dict
from seclake.detect.scorelevel import DEFAULT_BANDS
from seclake.errors import ValidationFailed
from seclake.ingest.parser import parse_line
from seclake.record.flatten import values_at
from seclake.service.backfill import backfill
from tests.detect.test_detector import _essence, rigs  # noqa: F401  (rigs: the fixture)

END_MS = 1_700_000_000_000  # the demo tests' week: a fixed end
RULE = "admin-login-new-address"


@pytest.fixture(scope="module")
def admin_logins() -> list[tuple[str, dict]]:
    """The week's records that name an admin account, parsed, in order (the others cannot match)."""
    out = []
    for line in generate(days=7, end_ms=END_MS):
        if "dmin" in line.line:
            parsed = parse_line(line.line, vendor=line.vendor, dataset=line.dataset, received_ms=END_MS)
            if parsed:
                out.append((line.dataset, parsed[0]))
    return out


def _first(record: dict, path: str) -> str:
    return str(values_at(record, path)[0])


def _pairs_first_seen(rig, items) -> list[tuple]:
    """(customer, address, user) of each successful admin logon whose pair is new, in log order."""
    rule = rig.book.get_or_none(RULE)
    seen, out = set(), []
    for dataset, record in items:
        if dataset == rule.dataset and rule.matcher()(record):
            pair = (record.get("@customer") or "", _first(record, "@fields.source.ip"),
                    _first(record, "@fields.user.name"))
            if pair not in seen:
                seen.add(pair)
                out.append(pair)
    return out


def _pairs(behaviors) -> list[tuple]:
    return [(b["customer"], b["key"], next(a["value"] for a in b["attributes"] if a["key"] == "user.name"))
            for b in behaviors if b["behaviorRule"] == RULE]


def test_a_week_of_demo_data_fires_only_for_new_address_and_user_pairs_across_a_restart(rigs, admin_logins):
    rig = rigs("a", rules=(), keep_starter=True)
    expected = _pairs_first_seen(rig, admin_logins)
    half = len(admin_logins) // 2
    rig.ingestion.append_records(admin_logins[:half])
    rig.stop()
    again = rigs("a", rules=(), keep_starter=True)  # the same data dir: the pairs seen come back
    again.ingestion.append_records(admin_logins[half:])
    fired = _pairs(again.behaviors())
    assert fired == expected
    assert len(fired) == len(set(fired)), "no (address, user) pair fires twice"
    # The demo's usual jump hosts fire once each, the episode's new address too.
    assert sum(1 for _c, ip, _u in fired if ip == "10.2.0.5") <= 1
    episode = manifest(days=7, end_ms=END_MS).episode("admin_new_address").values
    assert ("acme", episode["src_ip"], episode["user"]) in fired
    # Today's rule made a behavior per logon: far more than the new pairs.
    logons = sum(1 for d, r in admin_logins if again.book.get_or_none(RULE).matcher()(r))
    assert logons > 3 * len(fired)


def test_backfill_gives_what_streaming_gives(rigs, admin_logins):
    streaming = rigs("streaming", rules=(), keep_starter=True)
    streaming.ingestion.append_records(admin_logins)
    streamed = [b for b in streaming.behaviors() if b["behaviorRule"] == RULE]
    quiet = rigs("backfill", rules=())
    quiet.ingestion.append_records(admin_logins)
    quiet.book.add(streaming.book.get_or_none(RULE))
    backfill(quiet.ingestion, quiet.book, DEFAULT_BANDS, None, None, quiet.services.record_ids)
    filled = [b for b in quiet.behaviors() if b["behaviorRule"] == RULE]
    # Its history flags differ (other starter rules fired on the same keys while streaming): what it fired on does not.
    assert streamed and [_what(quiet, b) for b in filled] == [_what(streaming, b) for b in streamed]


def _what(rig, b: dict) -> tuple:
    essence = _essence(rig, b)
    return essence[:3] + essence[4:6]


def test_first_seen_is_refused_with_a_threshold_and_on_a_correlation():
    base = {"name": "x", "behavior": "X", "query": "a", "keyField": "source.ip", "keyType": "ip", "riskScore": 1,
            "firstSeen": ["user.name"]}
    assert rule_from_dict(base).to_dict()["firstSeen"] == ["user.name"]
    with pytest.raises(ValidationFailed, match="firstSeen: cannot be combined with threshold"):
        rule_from_dict({**base, "threshold": {"function": "count", "window": "5m", "value": 5}})
