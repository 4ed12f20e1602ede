"""The columnar path over a real lake (service/columnscan.py): the same answer as the row path
for the golden set, with a head, a range and a data policy; the splits' columns computed once
and kept; the row path when a column holds what the evaluator does not take."""

from __future__ import annotations

import pytest

from seclake.analytics import execute, parse
from seclake.api.options import build_plan
from seclake.errors import LimitExceeded
from seclake.query.parser import parse as parse_query
from seclake.record.dataset import EVENTS
from seclake.service import analytics, columnscan
from seclake.service.analytics import Progress, Selection, records
from seclake.storage import columns

_matching = columnscan._matching
from tests.analytics.golden import HOUR, NOW, QUERIES, RECORDS, T0, documents

POLICY = "host.name:(web-1 OR db-1)"


@pytest.fixture
def lake(services):
    services.start()
    services.lake.append([("event", d) for d in documents()])
    services.lake.flush()
    assert len(services.lake.splits("event")) >= 2  # the records span two days
    return services


def selection(services, head: str, restriction=None, range_from=T0, range_to=T0 + 31 * HOUR) -> Selection:
    options = {"searchStr": head, "range_from": range_from, "range_to": range_to, "fetchLimit": 0}
    plan, _ = build_plan(options, EVENTS, services.settings, restriction=restriction, now_ms=NOW)
    return Selection(EVENTS, plan)


def row_path(services, pipeline, chosen: Selection):
    rows = records(services, chosen, pipeline.fields, Progress(), max_records=10_000)
    return execute(pipeline, rows, now=NOW)


def test_the_golden_set_answers_as_the_row_path_whole_and_restricted_and_in_part_of_the_range(lake):
    restriction = parse_query(POLICY, EVENTS)
    taken = 0
    for golden in QUERIES:
        pipeline = parse(golden.query)
        for restricted, lo in ((None, T0), (restriction, T0 + 5 * HOUR)):
            chosen = selection(lake, pipeline.head, restricted, range_from=lo)
            progress = Progress()
            got = columnscan.answer(lake, pipeline, chosen, progress, NOW)
            if got is None:
                continue
            taken += 1
            want = row_path(lake, pipeline, selection(lake, pipeline.head, restricted, range_from=lo))
            assert (got.columns, got.values, got.warnings) == (want.columns, want.values, want.warnings), golden.query
            assert progress.read == progress.total
    assert taken >= 60  # both ways, the 30-odd queries it takes


def test_a_head_selects_the_same_records(lake):
    for head in ("user.name:alice", "bytes:[1000 TO 3000]", "event.outcome:failure AND NOT host.name:web-1"):
        pipeline = parse(f"{head} | STATS n = COUNT(*), b = SUM(bytes) BY host.name | SORT host.name")
        got = columnscan.answer(lake, pipeline, selection(lake, head), Progress(), NOW)
        assert got is not None
        assert got.values == row_path(lake, pipeline, selection(lake, head)).values, head


def test_a_head_of_existence_is_read_from_the_columns_and_selects_what_its_search_selects(lake, monkeypatch):
    # A null is no value, an empty string is one (docs/analytics.md): both as the search reads them.
    lake.lake.append([("event", {"@timestamp": T0 + HOUR, "@fields": {"user": {"name": ""}, "bytes": 7,
                                                                        "host": {"name": "web-1"}}})])
    lake.lake.flush()
    heads = ("bytes:*", "_exists_:user.name AND bytes:*", "user.name:*")
    stats = "| STATS n = COUNT(*), b = SUM(bytes), u = COUNT_DISTINCT(user.name) BY host.name | SORT host.name"
    wanted = {head: row_path(lake, parse(f"{head} {stats}"), selection(lake, head)).values for head in heads}
    assert all(wanted.values()) and wanted["bytes:*"] != wanted["user.name:*"]
    monkeypatch.setattr(columnscan, "_matching", lambda *a: pytest.fail("the head was searched"))
    for head in heads:
        progress = Progress()
        got = columnscan.answer(lake, parse(f"{head} {stats}"), selection(lake, head), progress, NOW)
        assert got.values == wanted[head], head
        assert 0 < progress.read == progress.total
    # A path the query does not read, or beside a data policy: searched as any head.
    searched = []
    monkeypatch.setattr(columnscan, "_matching", lambda split, task: searched.append(split) or _matching(split, task))
    for head, restriction in (("process.name:*", None), ("bytes:*", parse_query(POLICY, EVENTS))):
        pipeline = parse(f"{head} {stats}")
        got = columnscan.answer(lake, pipeline, selection(lake, head, restriction), Progress(), NOW)
        assert got.values == row_path(lake, pipeline, selection(lake, head, restriction)).values and searched
        searched.clear()


def test_a_head_of_existence_is_searched_where_a_record_holds_an_object_under_its_path(lake, monkeypatch):
    # {"bytes": {"in": 5}}: "bytes" exists (a value below it), its column holds none at "bytes".
    lake.lake.append([("event", {"@timestamp": T0 + HOUR, "@fields": {"bytes": {"in": 5}, "host": {"name": "db-1"}}})])
    lake.lake.flush()
    pipeline = parse("bytes:* | STATS n = COUNT(*), b = SUM(bytes) BY host.name | SORT host.name")
    want = row_path(lake, pipeline, selection(lake, "bytes:*")).values
    searched = []
    monkeypatch.setattr(columnscan, "_matching", lambda split, task: searched.append(split) or _matching(split, task))
    got = columnscan.answer(lake, pipeline, selection(lake, "bytes:*"), Progress(), NOW)
    assert got.values == want and searched
    # The new record counts: the ones before it that hold bytes (and a time the range holds), and it.
    assert dict((host, n) for n, _, host in want)["db-1"] == 1 + sum(
        1 for r in RECORDS if r.get("@fields.host.name") == "db-1" and r.get("@fields.bytes") is not None
        and isinstance(r["@timestamp"], int))


def test_a_head_s_docids_gathered_at_once_or_counted_first_give_one_answer_and_one_refusal(lake, monkeypatch):
    head = "event.outcome:failure"
    pipeline = parse(f"{head} | STATS n = COUNT(*), b = SUM(bytes) BY host.name | SORT host.name")
    want = row_path(lake, pipeline, selection(lake, head)).values
    progress = Progress()  # one search per split: its count and its docIds
    assert columnscan.answer(lake, pipeline, selection(lake, head), progress, NOW).values == want
    assert 0 < progress.read == progress.total
    # The splits hold more records than MAX_ROWS, the head selects no more: counted first, then paged.
    monkeypatch.setattr(columnscan, "MAX_ROWS", progress.total)
    again = Progress()
    assert columnscan.answer(lake, pipeline, selection(lake, head), again, NOW).values == want
    assert again.read == again.total == progress.total
    monkeypatch.setattr(lake.settings, "analytics_max_records", progress.total - 1)
    for most in (progress.total, 1_000_000):  # refused both ways, as the row path refuses
        monkeypatch.setattr(columnscan, "MAX_ROWS", most)
        with pytest.raises(LimitExceeded):
            columnscan.answer(lake, pipeline, selection(lake, head), Progress(), NOW)


def test_columns_are_computed_once_and_kept_beside_the_split(lake, monkeypatch):
    pipeline = parse("| STATS COUNT(*) BY host.name")
    first = columnscan.answer(lake, pipeline, selection(lake, ""), Progress(), NOW)
    # The two days in range (records whose ISO @timestamp the lake files under 1970 are not read).
    kept = [s.path / columns.DIRECTORY for s in lake.lake.splits("event") if (s.path / columns.DIRECTORY).exists()]
    assert len(kept) == 2 and all((d / "docids.npy").exists() and len(list(d.iterdir())) == 2 for d in kept)
    monkeypatch.setattr(columns, "_compute", lambda *a: pytest.fail("a kept column computed again"))
    again = columnscan.answer(lake, pipeline, selection(lake, ""), Progress(), NOW)
    assert again.values == first.values
    # What operators see: the columns computed (one path, two splits), the queries by path.
    metrics = lake.metrics.registry
    assert metrics.get_sample_value("seclake_analytics_columns_computed_total") == 2
    assert metrics.get_sample_value("seclake_analytics_paths_total", {"path": "columnar"}) == 2


def test_the_setting_off_a_column_it_does_not_take_and_too_many_records_leave_it_to_the_row_path(lake, monkeypatch):
    assert columnscan.answer(lake, parse("| STATS COUNT(*) BY @tags"), selection(lake, ""), Progress(), NOW) is None
    pipeline = parse("| STATS COUNT(*) BY host.name")
    monkeypatch.setattr(columnscan, "MAX_ROWS", 10)
    assert columnscan.answer(lake, pipeline, selection(lake, ""), Progress(), NOW) is None
    monkeypatch.setattr(columnscan, "MAX_ROWS", 100)
    assert columnscan.answer(lake, pipeline, selection(lake, ""), Progress(), NOW) is not None
    assert lake.metrics.registry.get_sample_value("seclake_analytics_paths_total", {"path": "rows"}) == 2
    monkeypatch.setattr(lake.settings, "analytics_columnar", False)
    assert columnscan.answer(lake, pipeline, selection(lake, ""), Progress(), NOW) is None
    # run() still answers, by the row path.
    result, _ = analytics.run(lake, pipeline, selection(lake, ""), Progress(), now_ms=NOW)
    assert result.values == row_path(lake, pipeline, selection(lake, "")).values


def test_computing_a_split_s_columns_stops_when_the_query_is_cancelled(lake, monkeypatch):
    monkeypatch.setattr(columns, "CHECK_EVERY", 5)
    progress = Progress()
    checks = []

    def check():
        checks.append(1)
        if len(checks) == 3:
            progress.stop.set()
        Progress.check(progress)

    monkeypatch.setattr(progress, "check", check)
    with pytest.raises(analytics.Cancelled):
        columnscan.answer(lake, parse("| STATS COUNT(*) BY host.name"), selection(lake, ""), progress, NOW)
    # Nothing half computed is kept: the next query computes the columns whole.
    kept = [s.path / columns.DIRECTORY for s in lake.lake.splits("event")]
    assert not any((d / columns._name("@fields.host.name")).exists() for d in kept)
    again = columnscan.answer(lake, parse("| STATS COUNT(*) BY host.name"), selection(lake, ""), Progress(), NOW)
    assert again.values == row_path(lake, parse("| STATS COUNT(*) BY host.name"), selection(lake, "")).values
