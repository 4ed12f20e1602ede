"""The Windows source's Sysmon lines: added to the demo without moving any other line, shipped as
Winlogbeat and NXLog ship them, parsed to Sysmon's common names, quiet for the starter pack."""

from __future__ import annotations

from collections import Counter

import orjson

from seclake.demo import DemoLine, stamped
from seclake.demo.generator import SYSMON_SHARE
from seclake.detect.rule import load_rule_file
from seclake.detect.rulebook import starter_pack
from seclake.detect.ruleset import RuleSet
from seclake.ingest import parse_line

from .conftest import DAYS, END_MS, is_sysmon


def test_the_other_lines_are_the_demo_without_sysmon(week: list[tuple[int, DemoLine]]) -> None:
    # The Sysmon lines come from a random stream of their own: taking them out gives back,
    # byte for byte and in order, what the generator makes without them.
    others = [(t, d) for t, d in week if not is_sysmon(d)]
    assert others == list(stamped(days=DAYS, end_ms=END_MS, sysmon=False))
    assert len(others) < len(week)


def test_a_twentieth_of_the_background_from_both_shippers(week: list[tuple[int, DemoLine]]) -> None:
    sysmon = [d for _, d in week if is_sysmon(d)]
    background = len(week) - len(sysmon) - sum(1 for _ in stamped(days=DAYS, end_ms=END_MS, events_per_day=0))
    assert abs(len(sysmon) / background - SYSMON_SHARE) < 0.005, (len(sysmon), background)
    shapes: dict[str, set[str]] = {}
    for d in sysmon:
        obj = orjson.loads(d.line)
        if "winlog" in obj:  # Winlogbeat: the event's data under winlog.event_data, ECS's event
            assert obj["winlog"]["channel"] == "Microsoft-Windows-Sysmon/Operational" and obj["event"]["code"]
            shapes.setdefault(d.customer, set()).add("winlogbeat")
        else:  # NXLog im_msvistalog: the data at the top, EventID a number
            assert obj["Channel"] == "Microsoft-Windows-Sysmon/Operational" and isinstance(obj["EventID"], int)
            assert obj["SourceModuleType"] == "im_msvistalog"
            shapes.setdefault(d.customer, set()).add("nxlog")
    assert shapes == {"acme": {"winlogbeat"}, "initech": {"winlogbeat"}, "globex": {"nxlog"}}


def test_parsed_to_sysmons_common_names_at_their_own_time(week: list[tuple[int, DemoLine]]) -> None:
    codes: Counter[str] = Counter()
    for t, d in week:
        if not is_sysmon(d):
            continue
        record, understood = parse_line(d.line, vendor=d.vendor, dataset=d.dataset, received_ms=END_MS,
                                        customer=d.customer)  # type: ignore[misc]
        assert understood and record["@timestamp"] == t, d.line
        f = record["@fields"]
        code = f["event"]["code"]
        codes[code] += 1
        assert f["Channel"] == "Microsoft-Windows-Sysmon/Operational" and f["EventID"] == int(code)
        assert f["host"]["name"].endswith((".acme.local", ".globex.local", ".initech.local"))
        if code == "1":
            p = f["process"]
            assert p["executable"] and p["command_line"] and p["parent"]["executable"]
            # What Windows says of the image (the unsigned installer says "-": left out).
            assert ("original_file_name" in p.get("pe", {})) != p["executable"].endswith("PDFConverterSetup.exe")
            assert f["user"]["name"]
        elif code == "3":
            assert f["destination"]["ip"] and f["source"]["ip"] and f["network"]["transport"] in ("tcp", "udp")
        elif code == "22":
            assert f["dns"]["question"]["name"]
        elif code in ("12", "13"):
            assert f["registry"]["path"]
        elif code == "11":
            assert f["file"]["path"]
    # The ids a workstation's Sysmon writes most, process creations and network connections first.
    assert set(codes) == {"1", "3", "5", "7", "10", "11", "12", "13", "22"}
    assert codes.most_common(2)[0][1] > codes["10"] * 4


def test_the_starter_pack_stays_quiet_on_them(week: list[tuple[int, DemoLine]]) -> None:
    # The demo's behaviors are its episodes' (tests/detect/test_rulebook.py counts them): the
    # background Sysmon lines hold nothing the starter rules look for.
    rules = RuleSet([r for p in starter_pack() for r in load_rule_file(p)], 1)
    records = [parse_line(d.line, vendor=d.vendor, dataset=d.dataset, received_ms=END_MS)[0]  # type: ignore[index]
               for _, d in week if is_sysmon(d)]
    assert records and not any(rules.matching("event", r) for r in records)
