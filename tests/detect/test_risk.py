"""The risk model on the demo week: the starter pack over every record of the
week, summaries folded and stored as the server does; what an analyst sees
first is the seeded attacks, and critical is rare."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from seclake.demo import manifest
from seclake.demo.generator import generate
from seclake.detect.detector import Detector
from seclake.detect.rulebook import RuleBook
from seclake.detect.scorelevel import DEFAULT_BANDS
from seclake.detect.summaries import SummaryRow, SummaryStore
from seclake.ingest.parser import parse_line

END_MS = 1_700_000_000_000  # the demo tests' week: a fixed end
DAYS = 7


@pytest.fixture
def summaries(db) -> list[dict]:
    """The demo week's summaries, highest score first."""
    book = RuleBook(db)
    book.seed()
    book.load()
    store = SummaryStore(db, DEFAULT_BANDS)
    detector = Detector(book, db, bands=DEFAULT_BANDS, summaries=store)
    items = []
    for line in generate(days=DAYS, end_ms=END_MS):
        parsed = parse_line(line.line, vendor=line.vendor, dataset=line.dataset, received_ms=END_MS)
        if parsed:
            items.append((line.dataset, parsed[0]))
    for first in range(0, len(items), 5000):
        batch = items[first:first + 5000]
        detector.logged(first + len(batch), detector.process(batch, first + 1))
    detector.save(END_MS)
    with db.session() as s:
        docs = [doc for (doc,) in s.execute(select(SummaryRow.doc))]
    return sorted(docs, key=lambda d: -d["riskScore"])


def attack_keys() -> set[str]:
    """The keys the scenario's attacks give summaries: addresses, hosts and accounts."""
    keys = set()
    for e in manifest(days=DAYS, end_ms=END_MS).episodes:
        if e.name == "admin_new_address":
            continue  # a first admin logon: low, as every address on the data's first day
        for name in ("src_ip", "client_ip", "client", "host", "user"):
            if isinstance(e.values.get(name), str):
                keys.add(e.values[name])
    return keys


def test_the_seeded_attacks_rank_first_and_critical_is_rare(summaries):
    top = [d["key"] for d in summaries[:5]]
    assert set(top) <= attack_keys(), f"top 5: {top}"
    critical = [d["key"] for d in summaries if d["scoreLevel"] == "critical"]
    assert len(critical) <= 0.15 * len(summaries), f"{len(critical)} of {len(summaries)} critical"
    levels = {d["scoreLevel"] for d in summaries}
    assert len(levels) >= 4, f"the levels spread the summaries: {levels}"


def test_repeats_of_one_rule_score_as_one_and_distinct_tactics_add(summaries):
    by_key = {d["key"]: d for d in summaries}
    # Eight lookups of bad domains by one client: one rule, one finding.
    beacons = by_key[manifest(days=DAYS, end_ms=END_MS).episode("bad_domain_dns").values["client"]]
    assert [(e["behaviorRule"], e["count"]) for e in beacons["summaryList"]] == [("known-bad-domain", 8)]
    assert beacons["riskScore"] == 3000 and beacons["scoreLevel"] == "medium"
    # The brute force that got in: three rules, two tactics, above the rule that repeated most.
    brute = by_key[manifest(days=DAYS, end_ms=END_MS).episode("brute_force").values["src_ip"]]
    assert len(brute["summaryList"]) == 3 and brute["tactics"] == ["credential-access", "initial-access"]
    assert brute["riskScore"] == 4000 + 707 + 289 + 1000 > beacons["riskScore"]
    assert all(sum(e["riskScore"] for e in d["summaryList"]) + d["tacticBonus"] == d["riskScore"] for d in summaries)
