"""How fast records go through the enabled rules (``RuleSet.matching``), and what the rules take.

``python -m seclake.bench.rulematch [SIGMA_RULES_DIR_OR_ZIP...]`` times the
stateless half of detection on the benchmark's demo data (every vendor)
plus the parsed Sysmon and Windows records of the ingest fixtures, with:

- the starter pack;
- the starter pack and every SigmaHQ rule seclake imports from the paths
  given (a ``rules*/`` tree or release zip: ``seclake/sigma/importer.py``);
- the same rules tried one by one on every record (no index), to show what
  the index (``detect/ruleindex.py``) saves.

Figures are records per second on one core, the time building the rule set
took (its index: the RE2 sets of the rules' literals; a set already compiled
for an earlier generation with the same literals is reused, so the third
line's build says what a new generation of the same rules costs), and the
memory the rule set takes once its matchers are compiled (tracemalloc).
docs/rules.md quotes them.
"""

from __future__ import annotations

import gc
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from seclake.detect.rule import Rule, load_rule_file
from seclake.detect.rulebook import starter_pack
from seclake.detect.ruleset import RuleSet
from seclake.query.matcher import RecordView
from seclake.record.dataset import DATASETS

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "ingest" / "fixtures"


def records(events: int = 20_000) -> list[tuple[str, dict[str, Any]]]:
    """The demo generator's records (its mix of vendors) and the Windows fixtures' records, repeated to a tenth."""
    from seclake.demo.generator import generate
    from seclake.ingest.parser import parse_line

    now = int(time.time() * 1000)
    out = []
    for line in generate(days=1, end_ms=now, events_per_day=events):
        parsed = parse_line(line.line, vendor=line.vendor, dataset=line.dataset, received_ms=now)
        if parsed:
            out.append((line.dataset, parsed[0]))
    windows = []
    for name in ("sysmon.json", "winsecurity.json"):
        path = FIXTURES / name
        if path.exists():
            for case in json.loads(path.read_text())["lines"].values():
                if case.get("record"):
                    windows.append(("event", case["record"]))
    while windows and len(windows) < len(out) // 10:
        windows = windows * 2
    return out + windows[: len(out) // 10]


def rate(ruleset: RuleSet, items: list[tuple[str, dict]], indexed: bool = True) -> tuple[float, int]:
    """Records per second through the rule set, and how many (record, rule) matches."""
    matched = 0
    start = time.perf_counter()
    for dataset, record in items:
        if indexed:
            matched += len(ruleset.matching(dataset, record))
        else:
            rules = ruleset.rules(dataset)
            view = RecordView(record, DATASETS[dataset])
            matched += sum(1 for rule, _ in rules if rule.matcher()(view))
    return len(items) / (time.perf_counter() - start), matched


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def built(rules: list[Rule], items) -> tuple[RuleSet, int, float]:
    """The rule set with every matcher compiled, and the bytes that took (Python objects; RE2's
    automatons are C++: ``main`` also prints the process's resident growth)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    ruleset = RuleSet(rules, 1)
    took = time.perf_counter() - start
    for _dataset, record in items[:200]:  # compile the matchers the way a first batch would
        for name in ("event", "flow"):
            for rule, _ in ruleset.rules(name):
                rule.matcher()
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return ruleset, size, took


def main(argv: list[str]) -> None:
    from seclake.sigma.importer import read

    items = records()
    starter = [r for p in starter_pack() for r in load_rule_file(p)]
    report = read([Path(a) for a in argv]) if argv else None
    sigma = [r for r in report.rules] if report is not None else []
    print(f"{len(items)} records; {len(starter)} starter rules; {len(sigma)} Sigma rules imported"
          + (f" ({len(report.skipped)} skipped)" if report is not None else ""))
    for label, rules, indexed in (("starter pack", starter, True), ("starter + Sigma, indexed", starter + sigma, True),
                                  ("starter + Sigma, one pass per rule", starter + sigma, False)):
        if not indexed and not sigma:
            continue
        rss = _rss()
        ruleset, size, took = built([r for r in rules if r.enabled], items)
        rate(ruleset, items[:2000], indexed)  # warm: compiled matchers, RE2 automatons' first states
        # One pass per rule is ~100 records/s with SigmaHQ's rules: a sample of it tells enough.
        per_s, matched = rate(ruleset, items if indexed else items[::10], indexed)
        stats = ruleset._by_dataset["event"][1].stats() if ruleset._by_dataset["event"][1] else {}
        print(f"{label:36s} {per_s:9,.0f} records/s  {matched:6d} matches{'' if indexed else ' (a tenth)'}  "
              f"built in {took:5.2f} s  "
              f"rules memory {size / 1e6:5.1f} MB (resident +{(_rss() - rss) / 1e6:5.1f} MB)  {stats}")


if __name__ == "__main__":
    main(sys.argv[1:])
