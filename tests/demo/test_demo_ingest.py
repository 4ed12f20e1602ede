"""The demo lines go through seclake's own parsers: understood, with the right time.

This is the path `seclake demo` takes, so a line the parsers cannot read
would be a broken first impression.
"""

from __future__ import annotations

from collections import Counter

from seclake.demo import DemoLine
from seclake.ingest import parse_line

from .conftest import END_MS, is_sysmon

# RFC 3164 stamps stop at the second; everything else carries milliseconds.
SECOND_PRECISION = {"fortigate", "sshd"}


def test_every_line_is_understood_with_its_own_timestamp(week: list[tuple[int, DemoLine]]) -> None:
    wrong: Counter[str] = Counter()
    for t, d in week[::7]:
        parsed = parse_line(d.line, vendor=d.vendor, dataset=d.dataset, received_ms=END_MS, customer=d.customer)
        assert parsed is not None
        record, understood = parsed
        assert understood, d.line
        assert record["@type"] == d.dataset
        want = t - t % 1000 if d.vendor in SECOND_PRECISION else t
        if record["@timestamp"] != want:
            wrong[d.vendor] += 1
    assert not wrong, wrong


def test_key_value_and_cef_fields_come_out_as_fields(week: list[tuple[int, DemoLine]]) -> None:
    firsts: dict[str, DemoLine] = {}
    for _, d in week:
        firsts.setdefault("sysmon" if is_sysmon(d) else d.vendor, d)
    expect = {"fortigate": {"srcip", "dstport", "action"}, "bind": {"client", "query", "qtype", "rcode"},
              "suricata": {"src", "dst"}, "squid": {"url", "status"}, "edr": {"process", "cmdline"},
              "windows": {"EventID", "TargetUserName"}, "netflow": {"sip", "dip", "txB"},
              "sysmon": {"EventID", "Channel", "winlog", "event"}}  # Winlogbeat's: Channel and EventID added
    for vendor, keys in expect.items():
        d = firsts[vendor]
        record, _ = parse_line(d.line, vendor=d.vendor, dataset=d.dataset, received_ms=END_MS)  # type: ignore[misc]
        assert keys <= set(record["@fields"]), (vendor, record["@fields"])


def test_the_readme_query_shows_failed_logins_and_no_blocked_traffic(week: list[tuple[int, DemoLine]]) -> None:
    # README: "event.category:authentication AND event.outcome:failure already shows failed logins of
    # sshd, Windows and Okta side by side"; and a blocked connection is no failure (ECS), so the bare
    # event.outcome:failure is no longer mostly FortiGate denies (1,406 of its 2,264 hits before).
    from seclake.query.matcher import compile_matcher
    from seclake.query.parser import parse
    from seclake.record.dataset import EVENTS

    readme = compile_matcher(parse("event.category:authentication AND event.outcome:failure", EVENTS), EVENTS)
    failure = compile_matcher(parse("event.outcome:failure", EVENTS), EVENTS)
    by_readme: Counter[str] = Counter()
    by_failure: Counter[str] = Counter()
    for _, d in week:
        if d.dataset != "event":
            continue
        record, _ = parse_line(d.line, vendor=d.vendor, dataset=d.dataset, received_ms=END_MS)  # type: ignore[misc]
        by_readme[d.vendor] += readme(record)
        by_failure[d.vendor] += failure(record)
    assert by_readme["sshd"] and by_readme["windows"] and by_readme["okta"], by_readme
    assert not by_failure["fortigate"], by_failure
