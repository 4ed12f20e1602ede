"""The benchmark harness: deterministic data, an agreement check that catches a planted mismatch,
peers that follow the query semantics, and a tiny end-to-end run that writes its tables."""

from __future__ import annotations

import json
import tempfile

import pytest

from seclake.bench import data as bench_data
from seclake.bench import formats
from seclake.bench.agree import Agreement, differences
from seclake.bench.classes import BY_NAME, CLASSES, Answer
from seclake.bench.report import ms
from seclake.bench.runner import BenchFailed, BenchOptions, _turns, run, stats


def test_generator_is_deterministic(tmp_path):
    a = bench_data.write_batches(tmp_path / "a", events=3000, days=8)
    b = bench_data.write_batches(tmp_path / "b", events=3000, days=8)
    assert a.lines == b.lines > 3000  # background lines plus the episodes
    assert [(x.vendor, x.dataset, x.customer, x.lines) for x in a.batches] == \
           [(x.vendor, x.dataset, x.customer, x.lines) for x in b.batches]
    for x, y in zip(a.batches, b.batches):
        assert open(x.path, "rb").read() == open(y.path, "rb").read()
    c = bench_data.write_batches(tmp_path / "c", events=3000, days=8, seed=8)
    assert [open(x.path, "rb").read() for x in c.batches] != [open(x.path, "rb").read() for x in a.batches]
    # Every source of the mix is there, flows included.
    assert {x.vendor for x in a.batches} >= {"fortigate", "bind", "squid", "sshd", "windows", "suricata", "edr", "netflow"}
    assert set(a.by_dataset) == {"event", "flow"}


def _answer() -> Answer:
    return Answer(total=42, pages={0: [9, 8, 7], 1000: []}, facets={"@sender": [("fw-01", 30), ("dns", 12)]},
                  histogram=[(0, 40), (3_600_000, 2)])


def test_agreement_catches_a_planted_mismatch():
    agree = Agreement()
    agree.add("Q1", "http", _answer())
    agree.add("Q1", "raw", _answer())
    assert agree.ok and agree.checks == 1
    planted = _answer()
    planted.pages[0] = [9, 7, 8]  # two hits swapped
    planted.facets["@sender"] = [("fw-01", 29), ("dns", 12)]
    agree.add("Q1", "duckdb", planted)
    assert not agree.ok
    text = "\n".join(agree.mismatches)
    assert "Q1: http vs duckdb: page at offset 0: first difference at position 1" in text
    assert "facet @sender: fw-01: 30 != 29" in text


def test_agreement_compares_engines_that_answered_before_the_reference():
    agree = Agreement()
    wrong = _answer()
    wrong.total = 41
    agree.add("Q2", "sqlite", wrong)
    agree.add("Q2", "http", _answer())
    assert agree.mismatches == ["Q2: http vs sqlite: total: 42 != 41"]


def test_agreement_catches_an_engine_that_changes_its_answer():
    agree = Agreement()
    agree.add("Q3", "raw", _answer())
    later = _answer()
    later.histogram = [(0, 41), (3_600_000, 2)]
    agree.add("Q3", "raw", later)
    assert len(agree.mismatches) == 1 and "histogram" in agree.mismatches[0]


def test_differences_of_equal_answers_is_empty():
    assert differences(_answer(), _answer()) == []


def test_stats_median_and_nearest_rank_p95():
    s = stats([5.0, 1.0, 3.0, 2.0, 4.0])
    assert s["median"] == 3.0 and s["p95"] == 5.0 and s["n"] == 5
    assert stats([float(i) for i in range(1, 101)])["p95"] == 95.0


def test_peer_rows_follow_the_query_semantics():
    from seclake.bench.peers import BREAK, COLUMNS, row_of

    rec = {"@timestamp": 5, "@message": "Failed password for ADMIN", "@sender": "FW-01",
           "@fields": {"action": "Deny", "dstport": "0443", "sentbyte": "193", "dstip": "10.1.2.3"}}
    row = dict(zip(COLUMNS, row_of(7, rec)))
    assert row["sender"] == "fw-01" and row["action"] == "deny"  # keywords: lowercased
    assert row["dstport"] == 443.0 and row["sentbyte"] == 193.0  # numbers stored as strings are numbers
    assert row["dstip4"] == (10 << 24) | (1 << 16) | (2 << 8) | 3
    assert " failed password for admin " in row["words"]  # tokens of the default field
    assert f" admin {BREAK} " in row["words"]  # values stay apart: no phrase across two values
    assert row["srcip"] is None and row["query"] is None  # missing fields are NULL


def test_every_class_has_a_peer_query_and_a_window():
    from seclake.bench.peers import where

    for qc in CLASSES:
        lo, hi = qc.window()
        assert hi - lo + 1 == qc.days * bench_data.DAY_MS
        if "duckdb" in qc.engines:
            for dialect in ("duckdb", "sqlite"):
                sql, params = where(qc, dialect)
                assert sql.count("?") == len(params)
    assert BY_NAME["Q8"].days == 30 and BY_NAME["Q2"].needle


# Back-to-back pairs per class in the tiny run (make bench: 40): a tenth of its time.
TINY_PAIRS = 6
# The classes the tiny run times cold: each restarts the server (2.6 s; all twelve were a quarter of the run).
TINY_COLD = ("Q1", "SUMM")


@pytest.mark.slow
def test_a_tiny_run_completes_agrees_and_writes_the_tables(tmp_path, monkeypatch):
    out, results = tmp_path / "benchmarks.md", tmp_path / "tiny.json"
    # Days quiet for 3 s get their last merge (30 s by default: the run waited for it).
    monkeypatch.setenv("SECLAKE_MERGE_QUIET_SECONDS", "3")
    opts = BenchOptions(events=20_000, days=30, reps=5, load_seconds=2, clients=4, out=out, results=results,
                        arrival_seconds=2, arrival_rate=5,
                        data_dir=tmp_path / "data", cli_ingest=False, parse_lines=200, baseline="HEAD",
                        scaling_events=3_000, pairs=TINY_PAIRS, cold=TINY_COLD,
                        # SigmaHQ's rules beside the starter pack: tests/bench/test_sigma.py runs that stage.
                        sigma=None)
    try:
        r = run(opts, echo=lambda s: None)
    except BenchFailed as e:  # a disagreement is a failure of seclake or of the harness: show it
        pytest.fail(str(e) + "\n" + (results.read_text() if results.exists() else ""))
    assert r["agreement"]["ok"] and r["agreement"]["checks"] > 100
    one = r["scales"]["1"]
    assert one["ingest_http"]["events_per_second"] > 0 and one["ingest_http"]["bytes_per_event"] > 0
    # The floor the ingest target is judged against: tantivy alone on the same records, in the same run.
    raw = one["ingest_raw"]
    assert raw["records"] == raw["lines"] == one["data"]["lines"] and raw["events_per_second"] > 0
    # ... in a process started as the split builders are: the same C allocator on both sides of the ratio.
    assert raw["allocator"] == r["code"]["allocator"]
    # At rest the published splits are all of the lake but its live log segment.
    http = one["ingest_http"]
    assert 0 < http["split_bytes_per_event"] <= http["bytes_per_event"]
    assert http["splits_over_raw"] == pytest.approx(http["split_bytes"] / one["data"]["bytes"])
    assert one["server_peak_rss_kb"] > 0
    # Where the ingest's CPU went: the server parsed and the workers built (the tiny run
    # is small enough to build in the server's process, so only the server is sure to count).
    cpu = http["cpu"]["us_per_line"]
    assert cpu["server"] > 1 and cpu["bench client"] > 0
    assert http["cpu"]["total_us_per_line"] == pytest.approx(sum(cpu.values()))
    # Serving alone (a restarted server) must not be charged with the ingest's peak.
    assert 0 < one["server_peak_rss_kb_serving"] <= one["server_peak_rss_kb"]
    assert one["load"]["errors"] == 0 and one["load"]["requests"] > 0
    # Searches on a schedule, timed from their arrival: idle, then during an import posted as fast as it goes.
    arrivals = one["arrivals"]
    assert arrivals["idle"]["requests"] == arrivals["during_import"]["requests"] == 10
    assert arrivals["idle"]["errors"] == arrivals["during_import"]["errors"] == 0
    assert arrivals["import_alone"]["lines"] > 0 and arrivals["import_during_searches"]["lines"] > 0
    assert 0 < arrivals["search_cpu_share"] < 1 and arrivals["p50_ratio"] > 0 and arrivals["import_kept"] > 0
    for qc in CLASSES:
        for engine in qc.engines:
            t = one["queries"][qc.name][engine]
            assert t["n"] == 5 and t["median"] > 0
            assert (t["cold"] > 0) if qc.name in TINY_COLD else ("cold" not in t), (qc.name, engine)
    assert one["queries"]["Q2"]["total"] == 1  # the needle: one record in the last 7 days
    # Piped queries over HTTP against DuckDB on the same records: timed cold and warm, every value equal.
    from seclake.bench.analytics import CLASSES as ANALYTICS

    an = one["analytics"]
    assert an["ok"] and not an["mismatches"]
    for ac in ANALYTICS:
        f = an["classes"][ac.name]
        assert f["rows"] > 0 and f["ratio"] > 0
        for engine in ("http", "duckdb"):
            assert f[engine]["n"] == 5 and f[engine]["median"] > 0 and f[engine]["cold"] > 0
    assert an["server_peak_rss_kb"] > 0
    text = out.read_text()
    assert "## Analytics: piped queries (ds/query over HTTP) against DuckDB" in text
    assert "ds/query and DuckDB answered every class with the same rows and values" in text
    assert "This run: 20,000 events" in text and "| Q4 |" in text and "all engines agree" in text
    assert "HTTP / raw" in text and "## Load" in text and "memory while serving" in text
    assert "## Searches while an import runs" in text and "Searches arrive at 5 per second" in text
    # The HTTP layer's cost per request over the engine layer, judged against its target on
    # back-to-back pairs; the difference of the rounds' medians beside it.
    q2 = next(line for line in text.splitlines() if line.startswith("| Q2 |"))
    pairs = one["queries"]["Q2"]["wire_pairs"]
    assert pairs["n"] == TINY_PAIRS
    rounds = (one["queries"]["Q2"]["http"]["median"] - one["queries"]["Q2"]["engine"]["median"]) * 1000 / 2
    assert f"| {pairs['median'] * 1000 / 2:.2f} ({rounds:.2f}) |" in q2 and ", wire " in q2
    assert "floor: tantivy alone" in text and "x the tantivy floor" in text and "Disk at rest" in text
    assert "Where the CPU went over the HTTP ingest" in text and f"**{cpu['server']:.1f} µs**" in text
    scaling = one.get("ingest_scaling")
    if scaling:  # taskset is there: 1 core and 2 in turns, then 2 cores with parse workers, which did parse
        from seclake.bench.ingest import CORE_TURNS

        parsed = scaling["parse_workers"]["cpu"]["us_per_line"]
        assert parsed["parse workers"] > 0 and scaling[2]["cpu"]["us_per_line"]["parse workers"] == 0
        # Each pinning ran as often as CORE_TURNS says; its row's rate is from the mean of its runs.
        for cores in (1, 2):
            row = scaling[cores]
            assert len(row["turns"]) == CORE_TURNS.count(cores)
            mean = sum(t["seconds"] + t["seconds_to_searchable"] for t in row["turns"]) / len(row["turns"])
            assert row["searchable_events_per_second"] == pytest.approx(row["lines"] / mean)
        assert "pinned with taskset, in turns, 2 cores " in text and "rates from the means" in text
        assert "Parse workers (the same sample on 2 cores again" in text
    assert json.loads(results.read_text())["name"] == r["name"]
    # How fast the machine ran, for comparing absolute figures with another run's.
    assert f"took {r['machine']['loop_seconds'] * 1000:.0f} ms at the start" in text
    # The report says whether the compiled per-record path was measured.
    from seclake import native

    built = r["code"]["native"]
    assert built == {"compiled": len(native.compiled()), "modules": len(native.MODULES)}
    if built["compiled"] == built["modules"]:
        assert f"all {built['modules']} modules of seclake/native.py compiled" in text
    else:
        assert f"only {built['compiled']} of the {built['modules']} modules" in text
    # Parse rates of every format, with the common names and without.
    parsing = r["parsing"]
    assert {"Zeek conn", "Okta", "Cisco ASA", "FortiGate (kv)", "raw (unparsed)"} <= set(parsing)
    assert all(p["lines_per_second"] > 0 and p["own_fields_lines_per_second"] > 0 for p in parsing.values())
    assert "## Parsing, one core" in text and "| Zeek conn |" in text
    # The no-regression target, side by side: HEAD's code served a copy of the lake from a
    # directory of its own, gave every class the same answers, and each got a ratio.
    base = one["baseline"]
    assert base["loaded_from"] == [str((tmp_path / "data" / r["name"] / "baseline-code").resolve())]
    timed = {name: row for name, row in base["classes"].items()}
    assert set(timed) == {qc.name for qc in CLASSES if "http" in qc.engines}
    for name, row in timed.items():
        assert row["differences"] == [], name
        assert row["ratio"] > 0 and row["current"] > 0 and row["baseline"] > 0
    section = text.split("## No search regression")[1].split("## ")[0]
    assert f"by commit `{base['commit'][:12]}`" in section and f"{base['pairs']} pairs" in section
    q2 = timed["Q2"]
    assert f"| Q2 | {ms(q2['baseline'])} | {ms(q2['current'])} | {q2['ratio']:.2f}x |" in section
    assert not (tmp_path / "data" / r["name"] / "baseline-code").exists()  # removed with the data
    assert "## Ingest with every SigmaHQ rule for the supported sources\n\nNot run: this run left it out" in text


def test_both_split_formats_answer_every_bench_class_the_same(capsys, tmp_path, monkeypatch):
    # The same demo records written as format 1 and format 2 splits: every
    # bundle and histogram class gives the same totals, pages, facets and histograms.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert formats.main(["--events", "3000", "--days", "2", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "answers: the same in every format" in out and "| Q6 |" in out
    assert list(tmp_path.iterdir()) == []  # its splits are gone (each run left 7 MB in /tmp)


def test_each_engine_goes_first_in_turn_over_the_warm_rounds():
    names = ["http", "engine", "raw", "duckdb", "sqlite"]
    orders = [_turns(names, r) for r in range(5)]
    assert sorted(o[0] for o in orders) == sorted(names)
    assert all(sorted(o) == sorted(names) for o in orders)
    assert _turns(["engine"], 3) == ["engine"] and _turns([], 2) == []
