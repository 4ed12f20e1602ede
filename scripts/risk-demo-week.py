"""The demo week's behavior summaries by level (issue 42: the risk model, first-seen rules), measured.

Loads the demo week (7 days ending 2023-11-14 22:13:20 UTC, seed 7: the
demo tests' week) through the real ingestion path, rules included, into a
fresh data dir, then prints every summary by score with its level, the
share per level, the summaries of the scenario's attack episodes and their
rank, and how many behaviors each rule made.

    .venv/bin/python scripts/risk-demo-week.py

The before/after figures of docs/rules.md ("The risk model") come from it.
"""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import select  # noqa: E402

from seclake.demo import manifest  # noqa: E402
from seclake.detect.summaries import SummaryRow  # noqa: E402
from seclake.service.demo import load_demo  # noqa: E402
from seclake.services import Services  # noqa: E402
from seclake.settings import load_settings  # noqa: E402

END_MS = 1_700_000_000_000
DAYS = 7


def episode_keys() -> dict[str, str]:
    """Summary key -> the attack episode it belongs to."""
    out = {}
    for e in manifest(days=DAYS, end_ms=END_MS).episodes:
        for name in ("src_ip", "client_ip", "client", "host"):
            if name in e.values:
                out[str(e.values[name])] = e.name
        if e.name == "admin_new_address":
            out[e.values["src_ip"]] = e.name
    return out


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="seclake-risk-") as tmp:
        services = Services(load_settings(data_dir=Path(tmp)), one_shot=False)
        services.prepare()
        services.start()
        try:
            load_demo(services.ingestion, days=DAYS, end_ms=END_MS)
            services.lake.flush()
            services.detector.save()
            with services.db.session() as s:
                docs = [r for (r,) in s.execute(select(SummaryRow.doc))]
        finally:
            services.stop()
    docs.sort(key=lambda d: (-d["riskScore"], d["key"]))
    episodes = episode_keys()
    levels = collections.Counter(d["scoreLevel"] for d in docs)
    rules = collections.Counter()
    for d in docs:
        for e in d["summaryList"]:
            rules[e["behaviorRule"]] += e["count"]
    print(f"{len(docs)} summaries; levels: " + ", ".join(f"{k} {v}" for k, v in levels.most_common()))
    print(f"critical: {levels.get('critical', 0)} of {len(docs)} ({100 * levels.get('critical', 0) / max(len(docs), 1):.0f}%)")
    print("behaviors by rule: " + ", ".join(f"{k} {v}" for k, v in rules.most_common()))
    print(f"{'rank':>4} {'score':>7} {'level':9} {'day':10} {'key':26} rules (behaviors)  episode")
    for i, d in enumerate(docs, 1):
        what = ", ".join(f"{e['behaviorRule']} ({e['count']})" for e in d["summaryList"])
        print(f"{i:>4} {d['riskScore']:>7} {d['scoreLevel']:9} {d['dayIndex']:10} {d['key'][:26]:26} {what}  "
              f"{episodes.get(d['key'], '')}")


if __name__ == "__main__":
    main()
