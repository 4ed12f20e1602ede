"""The analytics stage: piped queries (``ds/query``, docs/analytics.md) against DuckDB, same records.

Each class is a piped query sent over HTTP to the serving ``seclake serve``
and the equivalent SQL run by DuckDB over a table of the same records, side
by side in one run: cold (the server restarted, DuckDB reopened), then warm
rounds with the two engines taking turns to go first, values compared
exactly, the ratio judged against issue 43's target (within 2x DuckDB's
time) and the server's peak memory over the stage kept. What is timed is each
engine's answer as it gives it (``fetch``: the HTTP request and its JSON
decoded; DuckDB's ``fetchall``); making both answers plain rows to compare
them (``plain``: dates parsed, rows sorted) is not, on either side (it took
~6 ms of the 1,000-row timechart's time, the bench's own work).

DuckDB's table is made from the peers' export (``peers.export_rows``: every
event record as seclake holds it, in the ``src`` column), at load time, as
an ETL into a peer would: one column per field the classes read, the value
as the record holds it (a keyword keeps its case: STATS groups with case, as
ES|QL's keywords), numbers from numbers or numeric strings (FortiGate's
``sentbyte="198"``: numbers in arithmetic, docs/analytics.md), a missing
field NULL.

Agreement: both answers become rows of plain values (a date column's ISO
string or epoch ms as epoch ms; a float that is an integer as that integer,
so an exact integer SUM compares as one), then sorted: every class ends in a
SORT over its group keys too, so which rows a LIMIT keeps is the same on both
sides. Integers and keywords compare exactly; a double (AVG, PERCENTILE)
within 1e-12 relative, the two engines' last-bit rounding of an interpolation
(numpy's ``linear`` percentile is ``a + (b - a) * f``, DuckDB's
``quantile_cont`` the same formula but its own float order).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from seclake.bench.data import DAY_MS, END_MS

# Issue 43: ds/query within 2x DuckDB's time per class.
TARGET_DUCK_RATIO = 2.0
# The relative difference allowed between two doubles (see the module's doc).
DOUBLE_TOLERANCE = 1e-12
# Rows every class keeps at most (below ds/query's max_rows of 10,000): the answer is bounded.
ROWS = 1000


@dataclass(frozen=True)
class AnalyticsClass:
    name: str
    title: str
    query: str  # the piped query ds/query runs
    sql: str  # DuckDB's over table ``an``; ``?`` ``?`` are the window's [from, to]
    days: int = 7  # the window ends at the data's end, as the search classes'

    def window(self, end_ms: int = END_MS) -> tuple[int, int]:
        return end_ms - self.days * DAY_MS, end_ms - 1


_W = "ts BETWEEN ? AND ?"

CLASSES: tuple[AnalyticsClass, ...] = (
    AnalyticsClass(
        "A1", "count by one keyword field",
        f"| STATS n = COUNT(*) BY @sender | SORT n DESC, @sender ASC NULLS LAST | LIMIT {ROWS}",
        f"SELECT count(*) AS n, sender FROM an WHERE {_W} GROUP BY sender "
        f"ORDER BY n DESC, sender ASC NULLS LAST LIMIT {ROWS}"),
    AnalyticsClass(
        "A2", "count + distinct by two fields",
        "| STATS n = COUNT(*), sources = COUNT_DISTINCT(@fields.srcip) BY @sender, @fields.action "
        f"| SORT n DESC, @sender ASC NULLS LAST, @fields.action ASC NULLS LAST | LIMIT {ROWS}",
        f"SELECT count(*) AS n, count(DISTINCT srcip) AS sources, sender, action FROM an WHERE {_W} "
        f"GROUP BY sender, action ORDER BY n DESC, sender ASC NULLS LAST, action ASC NULLS LAST LIMIT {ROWS}"),
    AnalyticsClass(
        "A3", "sum of bytes by destination per hour",
        "@fields.sentbyte:* | STATS bytes = SUM(@fields.sentbyte) BY @fields.dstip, hour = BUCKET(@timestamp, 1 hour) "
        f"| SORT bytes DESC, hour ASC, @fields.dstip ASC NULLS LAST | LIMIT {ROWS}",
        f"SELECT sum(sentbyte) AS bytes, dstip, ts - ts % 3600000 AS hour FROM an WHERE {_W} "
        "AND sentbyte IS NOT NULL GROUP BY dstip, hour "
        f"ORDER BY bytes DESC, hour ASC, dstip ASC NULLS LAST LIMIT {ROWS}"),
    AnalyticsClass(
        "A4", "a WHERE over a computed value",
        "| EVAL total = @fields.sentbyte + @fields.rcvdbyte | WHERE total > 10000 "
        "| STATS n = COUNT(*), bytes = SUM(total) BY @fields.srcip "
        f"| SORT n DESC, @fields.srcip ASC NULLS LAST | LIMIT {ROWS}",
        "SELECT count(*) AS n, sum(sentbyte + rcvdbyte) AS bytes, srcip FROM an "
        f"WHERE {_W} AND sentbyte + rcvdbyte > 10000 GROUP BY srcip "
        f"ORDER BY n DESC, srcip ASC NULLS LAST LIMIT {ROWS}"),
    AnalyticsClass(
        "A5", "percentiles",
        "@fields.sentbyte:* | STATS p50 = MEDIAN(@fields.sentbyte), p95 = PERCENTILE(@fields.sentbyte, 95), "
        "p99 = PERCENTILE(@fields.sentbyte, 99), n = COUNT(*) BY @sender "
        f"| SORT n DESC, @sender ASC NULLS LAST | LIMIT {ROWS}",
        "SELECT quantile_cont(sentbyte, 0.5) AS p50, quantile_cont(sentbyte, 0.95) AS p95, "
        "quantile_cont(sentbyte, 0.99) AS p99, count(*) AS n, sender FROM an "
        f"WHERE {_W} AND sentbyte IS NOT NULL GROUP BY sender "
        f"ORDER BY n DESC, sender ASC NULLS LAST LIMIT {ROWS}"),
)

# The table's columns: (name, record path, SQL type). Numbers are read from numbers or numeric strings.
COLUMNS = (("sender", "$.\"@sender\"", "VARCHAR"), ("action", "$.\"@fields\".action", "VARCHAR"),
           ("srcip", "$.\"@fields\".srcip", "VARCHAR"), ("dstip", "$.\"@fields\".dstip", "VARCHAR"),
           ("sentbyte", "$.\"@fields\".sentbyte", "BIGINT"), ("rcvdbyte", "$.\"@fields\".rcvdbyte", "BIGINT"))


def load(csv_path: Path, path: Path) -> float:
    """DuckDB's table ``an`` of the peers' export (``peers.COLUMNS``: ``ts``, the record JSON in ``src``); seconds.

    A keyword column holds the record's string; a number column the value of
    a number or of a string that writes an integer, else NULL (a field
    holding anything else, or several values, would make the classes differ
    from seclake: ``check_table`` refuses such data rather than bench it)."""
    import duckdb

    started = time.perf_counter()
    path.unlink(missing_ok=True)
    db = duckdb.connect(str(path))
    try:
        db.execute("SET enable_progress_bar = false")  # the bench's log, not a terminal
        cols = ", ".join(
            f"TRY_CAST(json_extract_string(src, '{p}') AS {t}) AS {name}" if t != "VARCHAR"
            else f"json_extract_string(src, '{p}') AS {name}" for name, p, t in COLUMNS)
        kinds = ", ".join(f"json_type(src, '{p}') AS {name}_kind" for name, p, _ in COLUMNS)
        # One pass over the export, the records' JSON not kept: rows in time order (DuckDB's zone
        # maps prune by time as seclake's splits do), each column's JSON kinds beside it until checked.
        db.execute(f"CREATE TABLE an AS SELECT CAST(ts AS BIGINT) AS ts, {cols}, {kinds} FROM read_csv(?, "
                   "header=true, all_varchar=true, quote='\"', escape='\"', max_line_size=10000000) ORDER BY ts",
                   [str(csv_path)])
        check_table(db)
        for name, _, _ in COLUMNS:
            db.execute(f"ALTER TABLE an DROP COLUMN {name}_kind")
        db.execute("CHECKPOINT")
    finally:
        db.close()
    return time.perf_counter() - started


def check_table(db) -> None:
    """Refuse data the table cannot hold as seclake reads it: an array or object where a column is."""
    kinds = ", ".join(f"{name}_kind" for name, _, _ in COLUMNS)
    for row in db.execute(f"SELECT DISTINCT {kinds} FROM an").fetchall():
        for (name, _, _), kind in zip(COLUMNS, row):
            if kind in ("ARRAY", "OBJECT"):
                raise ValueError(f"{name} holds a JSON {kind.lower()} in some record: the DuckDB table has one value")


class DuckAnalytics:
    """DuckDB over the analytics table, read-only, as the search classes' peer."""

    name = "duckdb"

    def __init__(self, path: Path):
        self.path = path
        self.db = self._connect()

    def _connect(self):
        import duckdb

        return duckdb.connect(str(self.path), read_only=True)

    def reopen(self) -> None:
        self.db.close()
        self.db = self._connect()

    def close(self) -> None:
        self.db.close()

    def run(self, ac: AnalyticsClass, end_ms: int = END_MS) -> list[tuple]:
        return self.plain(self.fetch(ac, end_ms))

    def fetch(self, ac: AnalyticsClass, end_ms: int = END_MS) -> list[tuple]:
        """The answer as DuckDB gives it (what is timed)."""
        lo, hi = ac.window(end_ms)
        return self.db.execute(ac.sql, [lo, hi]).fetchall()

    @staticmethod
    def plain(answer: list[tuple]) -> list[tuple]:
        return rows(answer)


class HttpAnalytics:
    """``ds/query`` over the bench's HTTP client (``engines.HttpEngine``: one keep-alive connection)."""

    name = "http"

    def __init__(self, http):
        self.http = http

    def run(self, ac: AnalyticsClass, end_ms: int = END_MS) -> list[tuple]:
        return self.plain(self.fetch(ac, end_ms))

    def fetch(self, ac: AnalyticsClass, end_ms: int = END_MS) -> dict[str, Any]:
        """The answer as ds/query gives it, its JSON decoded (what is timed)."""
        lo, hi = ac.window(end_ms)
        status, body = self.http.post("/api/ds/query", {"kargs": {"query": ac.query, "dataType": "event",
                                                                  "range_from": lo, "range_to": hi}})
        if status != 200 or body.get("verdict") != "OK":
            raise RuntimeError(f"{ac.name} over HTTP answered {status}: {str(body)[:500]}")
        resp = body["response"]
        if resp.get("warnings"):
            raise RuntimeError(f"{ac.name} over HTTP warned: {resp['warnings']}")
        return resp

    @staticmethod
    def plain(resp: dict[str, Any]) -> list[tuple]:
        dates = {i for i, c in enumerate(resp["columns"]) if c["type"] == "date"}
        return rows([tuple(_ms(v) if i in dates else v for i, v in enumerate(row)) for row in resp["values"]])


def _ms(v: Any) -> Any:
    if isinstance(v, str):
        return int(datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() * 1000)
    return v


def _plain(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    if hasattr(v, "__int__") and not isinstance(v, (int, float, bool, str)):  # DuckDB's HUGEINT, Decimal
        return int(v) if int(v) == v else float(v)
    return v


def rows(values: list) -> list[tuple]:
    """An answer as sorted rows of plain values (both sides list their columns in one order)."""
    return sorted((tuple(_plain(v) for v in row) for row in values), key=repr)


def differences(a: list[tuple], b: list[tuple], limit: int = 5) -> list[str]:
    """Where two answers differ, as readable lines (empty: they agree)."""
    out: list[str] = []
    if len(a) != len(b):
        out.append(f"{len(a)} rows != {len(b)} rows")
    for x, y in zip(a, b):
        if len(x) != len(y) or not all(_same(p, q) for p, q in zip(x, y)):
            out.append(f"{x} != {y}")
            if len(out) >= limit:
                break
    return out


def _same(p: Any, q: Any) -> bool:
    if isinstance(p, float) or isinstance(q, float):
        if isinstance(p, bool) or isinstance(q, bool) or p is None or q is None:
            return p == q
        return math.isclose(p, q, rel_tol=DOUBLE_TOLERANCE)
    return type(p) is type(q) and p == q


def run_stage(server, http, duck: DuckAnalytics, *, reps: int, classes=CLASSES) -> dict[str, Any]:
    """Every class cold then ``reps`` warm rounds on both engines, in turns; figures and answers.

    ``server``: the bench's ``Server`` (restarted here so its peak memory is
    this stage's); ``http``: the bench's ``HttpEngine`` (reopened after the restart)."""
    server.restart()
    http.reopen(server.url, server.token or "")
    engines = {"http": HttpAnalytics(http), "duckdb": duck}
    answers: dict[str, dict[str, list[tuple]]] = {}
    mismatches: list[str] = []

    def note(ac: AnalyticsClass, name: str, answer: list[tuple]) -> None:
        mine = answers.setdefault(ac.name, {})
        first = mine.setdefault(name, answer)
        pairs = [(f"{name} (first answer)", first, f"{name} (again)", answer)] if first is not answer else []
        other = "duckdb" if name == "http" else "http"
        if other in mine and first is answer:
            pairs.append(("http", mine["http"], "duckdb", mine["duckdb"]))
        for na, a, nb, b in pairs:
            for line in differences(a, b):
                msg = f"{ac.name}: {na} vs {nb}: {line}"
                if msg not in mismatches:
                    mismatches.append(msg)

    figures: dict[str, dict[str, Any]] = {ac.name: {"title": ac.title, "query": ac.query, "sql": ac.sql,
                                                    "days": ac.days} for ac in classes}
    for ac in classes:  # cold: the server has run no query since its start; DuckDB reopened
        for name in ("http", "duckdb"):
            if name == "duckdb":
                duck.reopen()
            t = time.perf_counter()
            raw = engines[name].fetch(ac)
            figures[ac.name].setdefault(name, {})["cold"] = time.perf_counter() - t
            note(ac, name, engines[name].plain(raw))
    samples: dict[tuple[str, str], list[float]] = {}
    for r in range(reps):
        for ac in classes:
            for name in (("http", "duckdb") if r % 2 == 0 else ("duckdb", "http")):
                t = time.perf_counter()
                raw = engines[name].fetch(ac)
                samples.setdefault((ac.name, name), []).append(time.perf_counter() - t)
                note(ac, name, engines[name].plain(raw))
    for (cname, name), s in samples.items():
        ordered = sorted(s)
        figures[cname][name].update(n=len(s), median=statistics.median(s), samples=s,
                                    p95=ordered[min(len(s) - 1, max(0, -(-95 * len(s) // 100) - 1))])
    for ac in classes:
        f = figures[ac.name]
        f["rows"] = len(answers[ac.name]["http"])
        if f["http"].get("median") and f["duckdb"].get("median"):
            f["ratio"] = f["http"]["median"] / f["duckdb"]["median"]
            f["within_target"] = f["ratio"] <= TARGET_DUCK_RATIO
    return {"classes": figures, "mismatches": mismatches, "ok": not mismatches, "reps": reps,
            "server_peak_rss_kb": server.peak_rss_kb(), "target_ratio": TARGET_DUCK_RATIO}


def report_lines(one: dict[str, Any]) -> list[str]:
    """The report's section (bench/report.py): one row per class, the target judged."""
    from seclake.bench.report import ms, verdict

    out = ["## Analytics: piped queries (ds/query over HTTP) against DuckDB, same records", ""]
    an = one.get("analytics")
    if not an:
        out += ["Not run (`--no-analytics` or `--no-peers`, or a run made before the stage existed).", ""]
        return out
    out += [f"Warm median / p95 / cold in ms, {an['reps']} rounds, the two engines in turns; ds/query's time "
            "is the whole HTTP request, its JSON decoded (the answers made comparable is not timed, on either side). Target: within "
            f"{an['target_ratio']:g}x DuckDB's time per class, every value equal.", "",
            "| class | rows | ds/query (HTTP) | DuckDB | ratio | target |", "|---|---:|---:|---:|---:|---|"]
    for name, f in an["classes"].items():
        h, d = f.get("http") or {}, f.get("duckdb") or {}
        out.append(f"| {name} {f['title']} | {f.get('rows', '–')} | {ms(h.get('median'))} / {ms(h.get('p95'))} / "
                   f"{ms(h.get('cold'))} | {ms(d.get('median'))} / {ms(d.get('p95'))} / {ms(d.get('cold'))} | "
                   f"{f['ratio']:.1f}x | {verdict(f.get('within_target'))} |" if f.get("ratio") else
                   f"| {name} {f['title']} | – | – | – | – | – |")
    out.append("")
    if an["ok"]:
        out.append("Agreement: ds/query and DuckDB answered every class with the same rows and values (cold, every "
                   "timed run).")
    else:
        out.append(f"Agreement: **{len(an['mismatches'])} DISAGREEMENTS** (the run fails):")
        out += [f"- {line}" for line in an["mismatches"][:20]]
    peak = an.get("server_peak_rss_kb")
    if peak:
        from seclake.bench.report import TARGET_RSS_MB

        out += ["", f"Server peak resident memory over the stage (restarted at its start; VmHWM): **{peak / 1024:.0f} MB**, "
                f"serving budget ≤ {TARGET_RSS_MB} MB: {verdict(peak / 1024 <= TARGET_RSS_MB)}."]
    out += ["", "The queries (the window: the data's last 7 days):", ""]
    out += [f"- {name}: `{f['query']}`" for name, f in an["classes"].items()]
    out.append("")
    return out
