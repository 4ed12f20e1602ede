"""SigmaHQ's own regression tests, run through seclake: every recorded event, sent as Winlogbeat
sends it and as NXLog sends it, parsed by seclake's real ingest, fires the rule it was recorded for.

The rules are imported as ``seclake rules import`` reads them (importer.read
over the rule's file); a rule of a source seclake does not parse is skipped
with its reason, and at least 95% of those of the supported sources must
import (docs/detections.md has the counts).
"""

from __future__ import annotations

from collections import Counter

import pytest

from seclake.detect.rule import Rule
from seclake.ingest import parse_line
from seclake.sigma.importer import read
from seclake.sigma.logsource import resolve
from seclake.sigma.conversion import parse
from seclake.sigma.unsupported import Unsupported
from tests.sigma.sigmahq import extract, nxlog, regressions, rule_files, winlogbeat

SHIPPERS = {"winlogbeat": winlogbeat, "nxlog": nxlog}


@pytest.fixture(scope="module")
def sigmahq(tmp_path_factory):
    root = extract(tmp_path_factory.mktemp("sigmahq"))
    files = rule_files(root)
    cases = [r for r in regressions(root) if r.rule_id in files]
    return root, files, cases


@pytest.fixture(scope="module")
def imported(sigmahq):
    """rule id -> (the imported Rule, or the reason it was skipped), for every rule with a regression test."""
    _, files, cases = sigmahq
    report = read(sorted({files[c.rule_id] for c in cases}))
    assert not report.errors
    out: dict[str, Rule | str] = {r.sigma.sigma_id: r for r in report.rules}
    for skipped in report.skipped:
        text = open(skipped.file, encoding="utf-8").read()
        out[str(parse(text).id)] = skipped.reason
    return out


def _supported(path) -> bool:
    try:
        resolve(parse(path.read_text(encoding="utf-8")).logsource)
        return True
    except Unsupported:
        return False


def _record(line: str) -> dict:
    parsed = parse_line(line, vendor="windows", dataset="event", received_ms=1_800_000_000_000)
    assert parsed is not None
    return parsed[0]


def test_rules_of_supported_sources_import(sigmahq, imported):
    _, files, cases = sigmahq
    ids = {c.rule_id for c in cases}
    supported = [i for i in ids if _supported(files[i])]
    skipped = Counter(imported[i] for i in supported if not isinstance(imported[i], Rule))
    assert len(cases) >= 190  # the archive's ~200 regression tests are all read
    assert len(supported) >= 0.9 * len(ids), "most regression rules are of sources seclake parses"
    assert sum(skipped.values()) <= 0.05 * len(supported), skipped


def test_every_regression_test_passes_from_both_shippers(sigmahq, imported):
    """Of a test's recorded events, the rule fires on at least as many as SigmaHQ says (match_count),
    whichever shipper sent them, and every firing has its key. At least: some JSON files hold more
    events than the EVTX SigmaHQ counted in, and those match too (dtrace_kernel_dump: two commands,
    both with ``lkd(0)``)."""
    _, _, cases = sigmahq
    failures, ran = [], 0
    for case in cases:
        rule = imported[case.rule_id]
        if not isinstance(rule, Rule):
            continue
        for shipper, render in SHIPPERS.items():
            records = [_record(render(event)) for event in case.events]
            fired = [r for r in records if rule.matcher()(r)]
            ran += 1
            if len(fired) < min(case.match_count, len(records)) or not fired:
                failures.append(f"{case.folder} ({shipper}): fired on {len(fired)} of {len(records)} events, "
                                f"SigmaHQ says {case.match_count}")
            elif any(rule.key_of(r) is None for r in fired):
                failures.append(f"{case.folder} ({shipper}): fires but has no key {rule.key_field}")
    assert ran >= 2 * 180
    assert not failures, f"{len(failures)} of {ran} failed:\n" + "\n".join(failures)


def test_a_recorded_event_fires_no_rule_of_another_source(sigmahq, imported):
    """The log source selects: a Sysmon process start never fires a registry or image-load rule."""
    _, _, cases = sigmahq
    by_code: dict[str, list[Rule]] = {}
    for case in cases:
        rule = imported[case.rule_id]
        if isinstance(rule, Rule):
            for event in case.events:
                by_code.setdefault(str(event["System"]["EventID"]), []).append(rule)
    process = next(c for c in cases if isinstance(imported[c.rule_id], Rule)
                   and c.events[0]["System"]["EventID"] == 1)
    for shipper, render in SHIPPERS.items():
        record = _record(render(process.events[0]))
        for code, rules in by_code.items():
            if code in ("1", "4688"):
                continue
            fired = [r.name for r in rules if r.matcher()(record)]
            assert not fired, f"a Sysmon 1 event ({shipper}) fired rules for event {code}: {fired}"
