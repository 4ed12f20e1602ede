"""The analytics stage's pieces: DuckDB's table of the peers' export, the answers' normalisation
and the agreement check (the stage itself runs in tests/bench/test_bench.py's tiny run)."""

from __future__ import annotations

import csv

import pytest

from seclake.bench import analytics as A
from seclake.bench.data import END_MS


def test_answers_compare_exactly_but_for_a_double_last_bit():
    a = A.rows([[3, "fw-01", 1.5], [10, "dns", None]])
    # HUGEINT sums come back as ints, an integral double as that int; the rows' order is not compared.
    assert A.differences(a, A.rows([(10, "dns", None), (3.0, "fw-01", 1.5 * (1 + 1e-15))])) == []
    assert A.differences(a, A.rows([[3, "FW-01", 1.5], [10, "dns", None]]))  # keywords keep their case
    assert A.differences(a, A.rows([[3, "fw-01", 1.5001], [10, "dns", None]]))
    assert A.differences(a, A.rows([[4, "fw-01", 1.5], [10, "dns", None]]))
    assert A.differences(a, A.rows([[3, "fw-01", 1.5]])) == ["2 rows != 1 rows", "(10, 'dns', None) != (3, 'fw-01', 1.5)"]
    assert A.differences(A.rows([[None]]), A.rows([[0.0]]))  # null is no number


def test_a_date_column_reads_as_epoch_ms():
    assert A._ms("2026-10-31T23:00:00.000Z") == END_MS - 3_600_000
    assert A._ms(END_MS) == END_MS


def _export(path, records):
    from seclake.bench.peers import COLUMNS, row_of

    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(row_of(i, r) for i, r in enumerate(records))


def test_the_duckdb_table_holds_values_as_the_records_do(tmp_path):
    pytest.importorskip("duckdb")
    ts = END_MS - 1000
    records = [
        {"@timestamp": ts, "@sender": "FW-01", "@fields": {"action": "accept", "sentbyte": "198", "rcvdbyte": 602,
                                                           "srcip": "10.1.2.3", "dstip": "10.0.0.1"}},
        {"@timestamp": ts + 1, "@sender": "fw-01", "@fields": {"action": "deny"}},
        {"@timestamp": ts + 2, "@message": "no sender"},
    ]
    _export(tmp_path / "e.csv", records)
    A.load(tmp_path / "e.csv", tmp_path / "an.duckdb")
    duck = A.DuckAnalytics(tmp_path / "an.duckdb")
    try:
        got = duck.db.execute("SELECT ts, sender, action, sentbyte, rcvdbyte FROM an ORDER BY ts").fetchall()
        assert got == [(ts, "FW-01", "accept", 198, 602), (ts + 1, "fw-01", "deny", None, None),
                       (ts + 2, None, None, None, None)]
        # Every class's SQL runs over it: count by sender keeps case and the null group.
        assert duck.run(A.CLASSES[0]) == A.rows([(1, "FW-01"), (1, "fw-01"), (1, None)])
        for ac in A.CLASSES:
            duck.run(ac)
    finally:
        duck.close()


def test_a_field_holding_an_array_is_refused(tmp_path):
    pytest.importorskip("duckdb")
    _export(tmp_path / "e.csv", [{"@timestamp": END_MS - 5, "@fields": {"rcvdbyte": [1, 2]}}])
    with pytest.raises(ValueError, match="rcvdbyte holds a JSON array"):
        A.load(tmp_path / "e.csv", tmp_path / "an.duckdb")
