"""Peer engines holding the same records with the same semantics: DuckDB and SQLite FTS5.

The records are read back from the lake's splits (so peers hold exactly what
seclake holds, docIds included) and loaded into one table with typed columns
for the fields the classes use, normalized by the rules of
docs/query-semantics.md at load time, as an ETL into a peer would:

- keyword columns hold the normalized keyword (lowercased; numbers in their
  canonical spelling), so ``=`` and ``LIKE`` are case-insensitive matches;
- number columns hold the value of numbers *and* numeric strings
  (FortiGate's ``sentbyte="193"``), so ranges and ``dstport:443`` compare
  numbers; a missing field is NULL, and ``NOT`` keeps NULL rows;
- ``words`` holds the default field as tokens (runs of letters and digits,
  lowercased), one value after another with a break token between values,
  so a phrase matches within one value only; SQLite indexes it with FTS5,
  DuckDB scans it with ``contains`` (its fts extension has no phrases);
- ``dstip4`` holds an IPv4 address as an integer for CIDR blocks;
- ``src`` holds the record JSON, returned for the page as seclake does.
"""

from __future__ import annotations

import csv
import ipaddress
import multiprocessing
import os
import sqlite3
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from seclake.bench.classes import FACET_SIZE, FACETS, OFFSETS, PAGE, Answer, QueryClass
from seclake.bench.data import END_MS
from seclake.record.dataset import EVENTS
from seclake.record.flatten import leaves
from seclake.record.value import as_ip, as_number, keyword, scalar_text, tokens

BREAK = "zzvaluebreakzz"
KEYWORDS = {"@sender": "sender", "@fields.action": "action", "@fields.dstip": "dstip",
            "@fields.srcip": "srcip", "@fields.query": "query"}
NUMBERS = {"@fields.dstport": "dstport", "@fields.sentbyte": "sentbyte"}
COLUMNS = ["docid", "ts", *KEYWORDS.values(), *NUMBERS.values(), "dstip4", "words", "src"]
FACET_COLUMNS = {f: KEYWORDS[f] for f in FACETS}


def row_of(docid: int, source: dict[str, Any]) -> list:
    """One table row of a record, normalized by the query semantics."""
    kws: dict[str, str] = {}
    nums: dict[str, float] = {}
    words: list[str] = []
    for path, value in leaves(source):
        if EVENTS.is_date(path):
            continue
        words.append(" ".join(tokens(scalar_text(value))))
        col = KEYWORDS.get(path)
        if col is not None:
            if col in kws:
                raise ValueError(f"docId {docid}: {path} holds several values; the peer table has one column")
            kws[col] = keyword(value)
        col = NUMBERS.get(path)
        if col is not None:
            n = as_number(value)
            if n is not None:
                nums[col] = n
    ip = as_ip(source.get("@fields", {}).get("dstip")) if isinstance(source.get("@fields"), dict) else None
    ip4 = int(ip) if isinstance(ip, ipaddress.IPv4Address) else None
    ts = source.get("@timestamp")
    return [docid, int(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else 0,
            *[kws.get(c) for c in KEYWORDS.values()], *[nums.get(c) for c in NUMBERS.values()], ip4,
            " " + f" {BREAK} ".join(words) + " ", orjson.dumps(source).decode()]


def _split_rows(path: str) -> list[list]:
    # One split's rows, in a worker process of ``export_rows``.
    from seclake.storage.split import Split

    return [row_of(docid, orjson.loads(body)) for docid, body in Split(Path(path)).bodies()]


def export_rows(view, path: Path, workers: int | None = None) -> int:
    """Every event record of the lake as CSV rows, in (ts, docid) order; the number of rows.

    The rows are made in one process per core, a split at a time: making
    them is Python work (~200 us a record), and the bench waits for it.
    """
    paths = [str(split.path) for split in view.splits("event")]
    rows: list[list] = []
    with ProcessPoolExecutor(workers or os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")) as pool:
        for part in pool.map(_split_rows, paths):
            rows.extend(part)
    rows.sort(key=lambda r: (r[1], r[0]))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(rows)
    return len(rows)


# -- the WHERE clause of each class, in each dialect ---------------------------


def where(qc: QueryClass, dialect: str) -> tuple[str, list]:
    lo, hi = qc.window(END_MS)
    spec = qc.spec
    op = spec.get("op", "all")
    clauses, params = ["ts BETWEEN ? AND ?"], [lo, hi]
    if op == "word" or op == "phrase":
        words = [spec["word"]] if op == "word" else spec["words"]
        if dialect == "sqlite":
            clauses.append("docid IN (SELECT rowid FROM fts WHERE fts MATCH ?)")
            params.append('"' + " ".join(words) + '"')
        else:
            clauses.append("contains(words, ?)")
            params.append(" " + " ".join(words) + " ")
    elif op == "kw":
        clauses.append(f"{spec['column']} = ?")
        params.append(keyword(spec["value"]))
    elif op == "deny_not_443":
        # NOT includes records without the field: a NULL dstport stays.
        clauses.append("action = 'deny' AND (dstport IS NULL OR dstport <> 443)")
    elif op == "suffix":
        clauses.append(f"{spec['column']} LIKE ?")
        params.append("%" + spec["suffix"].lower())
    elif op == "ge":
        clauses.append(f"{spec['column']} >= ?")
        params.append(float(spec["value"]))
    elif op == "cidr":
        clauses.append(f"{spec['column']}4 BETWEEN ? AND ?")
        params += [spec["lo"], spec["hi"]]
    elif op != "all":
        raise ValueError(f"no SQL for {op}")
    return " AND ".join(clauses), params


class SqlPeer:
    """One SQL engine answering bundles: count, two pages, three facets, or a histogram."""

    name = "sql"
    dialect = "sqlite"

    def __init__(self, path: Path):
        self.path = path
        self.db = self._connect()

    def _connect(self):
        raise NotImplementedError

    def reopen(self) -> None:
        """A fresh connection, for the cold run."""
        self.db.close()
        self.db = self._connect()

    def close(self) -> None:
        self.db.close()

    def execute(self, sql: str, params: list) -> list[tuple]:
        return self.db.execute(sql, params).fetchall()

    def run(self, qc: QueryClass, end_ms: int = END_MS) -> Answer:
        w, params = where(qc, self.dialect)
        total = self.execute(f"SELECT count(*) FROM ev WHERE {w}", params)[0][0]
        answer = Answer(total=total)
        if qc.kind == "histogram":
            lo, hi = qc.window(end_ms)
            hour = 3_600_000
            div = "//" if self.dialect == "duckdb" else "/"
            rows = self.execute(f"SELECT (ts - ?) {div} {hour} AS b, count(*) FROM ev WHERE {w} GROUP BY b",
                                [lo, *params])
            counts = {int(b): n for b, n in rows}
            starts = range(lo - lo % hour, hi + 1, hour)
            answer.histogram = [(st, counts.get((st - lo) // hour, 0)) for st in starts]
            return answer
        for offset in OFFSETS:
            if offset:
                # The second request of a bundle counts again, as seclake's does.
                self.execute(f"SELECT count(*) FROM ev WHERE {w}", params)
            rows = self.execute(f"SELECT docid, src FROM ev WHERE {w} ORDER BY ts DESC, docid DESC LIMIT {PAGE} OFFSET {offset}",
                                params)
            answer.pages[offset] = [int(d) for d, _src in rows]
            for _, src in rows:
                orjson.loads(src)
            if offset == 0:
                for f, col in FACET_COLUMNS.items():
                    rows = self.execute(
                        f"SELECT {col}, count(*) AS c FROM ev WHERE {w} AND {col} IS NOT NULL "
                        f"GROUP BY {col} ORDER BY c DESC, {col} ASC LIMIT {FACET_SIZE}", params)
                    answer.facets[f] = [(k, int(n)) for k, n in rows]
        return answer


class SqlitePeer(SqlPeer):
    name = "sqlite"
    dialect = "sqlite"

    def _connect(self):
        return sqlite3.connect(str(self.path), check_same_thread=False)

    @staticmethod
    def load(csv_path: Path, path: Path) -> float:
        started = time.perf_counter()
        path.unlink(missing_ok=True)
        db = sqlite3.connect(str(path))
        db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE ev (docid INTEGER PRIMARY KEY, ts INTEGER NOT NULL, sender TEXT, action TEXT, dstip TEXT,"
            " srcip TEXT, query TEXT, dstport REAL, sentbyte REAL, dstip4 INTEGER, words TEXT, src TEXT);"
            # Contentless FTS5 over the default-field tokens; rowid = docId.
            "CREATE VIRTUAL TABLE fts USING fts5(words, content='', tokenize='unicode61 remove_diacritics 0');")
        with open(csv_path, newline="") as f:
            r = csv.reader(f)
            next(r)
            batch = []
            for row in r:
                batch.append([None if v == "" else v for v in row])
                if len(batch) >= 20000:
                    _sqlite_insert(db, batch)
                    batch = []
            _sqlite_insert(db, batch)
        db.executescript(
            "CREATE INDEX ev_ts ON ev(ts, docid); CREATE INDEX ev_srcip ON ev(srcip, ts);"
            "CREATE INDEX ev_action ON ev(action, ts); CREATE INDEX ev_query ON ev(query);"
            "CREATE INDEX ev_sentbyte ON ev(sentbyte); CREATE INDEX ev_dstip4 ON ev(dstip4);"
            "INSERT INTO fts(fts) VALUES ('optimize'); ANALYZE;")
        db.commit()
        db.close()
        return time.perf_counter() - started


def _sqlite_insert(db: sqlite3.Connection, batch: list[list]) -> None:
    if not batch:
        return
    db.executemany("INSERT INTO ev VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", batch)
    db.executemany("INSERT INTO fts(rowid, words) VALUES (?, ?)", [(r[0], r[10]) for r in batch])
    db.commit()


class DuckPeer(SqlPeer):
    name = "duckdb"
    dialect = "duckdb"

    def _connect(self):
        import duckdb

        return duckdb.connect(str(self.path), read_only=True)

    @staticmethod
    def load(csv_path: Path, path: Path) -> float:
        import duckdb

        started = time.perf_counter()
        path.unlink(missing_ok=True)
        db = duckdb.connect(str(path))
        types = {"docid": "BIGINT", "ts": "BIGINT", "dstport": "DOUBLE", "sentbyte": "DOUBLE", "dstip4": "BIGINT"}
        cols = ", ".join(f"'{c}': '{types.get(c, 'VARCHAR')}'" for c in COLUMNS)
        # Rows arrive in (ts, docid) order: DuckDB's zone maps prune by time like seclake's splits.
        db.execute(f"CREATE TABLE ev AS SELECT * FROM read_csv('{csv_path}', header=true, columns={{{cols}}}, "
                   "quote='\"', escape='\"', max_line_size=10000000)")
        db.execute("CHECKPOINT")
        db.close()
        return time.perf_counter() - started
