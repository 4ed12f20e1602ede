"""The source inventory (search/inventory.py) over parsed lines, searched by
the in-memory engine (the lake's meaning, tests/search/test_memory.py): counts
per source, the recent window, raw records as parse errors, the newest
record's time and description, listener or import, and the plan's query
(a data policy) respected. tests/api/test_sources.py runs it on the lake."""

from __future__ import annotations

from seclake.ingest.parser import parse_line
from seclake.ingest.record import sent_from
from seclake.query import ast
from seclake.record.dataset import DATASETS
from seclake.search.inventory import RECENT_MINUTES, source_inventory
from seclake.search.memory import search_records
from seclake.search.plan import SearchPlan

NOW = 1_795_800_000_000  # 2026-11-27
MINUTE = 60_000
EVENTS = DATASETS["event"]


def _fortigate(minutes_ago: int) -> str:
    at = NOW - minutes_ago * MINUTE
    return (f"devname=fw1 devid=FG100 logid=0000000013 type=traffic subtype=forward action=deny "
            f"srcip=10.0.0.{minutes_ago % 200} dstip=192.0.2.1 eventtime={at * 1_000_000}")


def _records() -> list[tuple[str, dict]]:
    lines = [("fortigate", _fortigate(m)) for m in (1, 5, 30, 59, 61, 600)]
    lines += [("junk", "nothing any parser understands"), ("junk", "still nothing at all")]
    lines += [("edge", "<134>Nov 27 10:00:00 fw1 edge: action=deny n=1")]
    out = []
    for i, (vendor, line) in enumerate(lines):
        record, _ = parse_line(line, vendor=vendor, dataset="event", received_ms=NOW - 2 * MINUTE)
        if vendor == "edge":
            sent_from(record, "192.0.2.7")  # as a listener keeps its sender
        out.append((f"{i:04d}", record))
    return out


def _inventory(query: ast.Node = ast.MatchAll()):
    records = _records()
    plan = SearchPlan(dataset="event", query=query, range_from=NOW - 5 * MINUTE, range_to=NOW)  # its range is ignored
    return source_inventory(lambda p: search_records(records, p, EVENTS), plan, EVENTS, now_ms=NOW)


def test_every_source_with_its_counts_last_event_rate_and_parse_errors():
    found = _inventory()
    rows = {s.source: s for s in found.sources}
    assert set(rows) == {"fortigate", "junk", "edge"} and not found.failed
    fortigate = rows["fortigate"]
    # Every record kept counts, the range of the plan notwithstanding; four in the last hour.
    assert (fortigate.records, fortigate.recent, fortigate.parse_errors) == (6, 4, 0)
    assert fortigate.per_minute == 4 / RECENT_MINUTES
    assert fortigate.last_seen == NOW - MINUTE
    assert fortigate.describes == ["Fortinet", "FortiGate"] and fortigate.received_by == "import"
    # Lines no parser understood are records too, kept raw: the source's parse errors.
    assert (rows["junk"].records, rows["junk"].parse_errors, rows["junk"].describes) == (2, 2, [])
    assert rows["edge"].received_by == "listener" and rows["edge"].dataset == "event"


def test_the_plans_query_a_data_policy_narrows_every_figure():
    found = _inventory(ast.Term(path="@source", value="junk"))
    assert [(s.source, s.records, s.parse_errors) for s in found.sources] == [("junk", 2, 2)]
