"""The golden set of piped queries, the records they run on, and a brute-force
reference for each: plain Python over the records, written from
docs/analytics.md and sharing no code with seclake.analytics.

``RECORDS`` are flat (stored paths, as the search hands them to the
evaluator); ``documents()`` are the same records nested, to import through
the API. ``QUERIES`` are ``Golden(query, reference, ordered)``:
``reference(records)`` gives ``(column names, rows)`` over any subset of the
records (a restricted user's visible ones too); ``ordered``: the rows'
order is part of the answer. ``agree(columns, values, golden, records)``
compares (None when they agree, else what differs). The records' times lie
in ``[T0, T0 + 31 h)`` (a range for a search over them); no answer depends on
when the query runs.
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from ipaddress import ip_address, ip_network

HOUR = 3_600_000
T0 = int(datetime(2026, 11, 20, tzinfo=UTC).timestamp() * 1000)
NOW = T0 + 40 * HOUR  # 2026-11-21T16:00:00Z

USERS = ["alice", "bob", "carol", "Dave", "eve", None]
COUNTRIES = ["US", "FR", "DE", "JP", "BR"]
HOSTS = ["web-1", "web-2", "db-1", "WS-7"]
PROCS = ["powershell.exe", "cmd.exe", "sshd", "nginx", "mimikatz.exe"]
SOURCES = ["10.0.0.5", "10.0.3.7", "192.168.1.20", "172.16.4.4", "8.8.8.8", "2001:db8::1"]
DESTS = ["10.1.1.1", "93.184.216.34", "10.1.1.2", "1.1.1.1"]


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _make_records() -> list[dict]:
    rng = random.Random(43)
    out = []
    for i in range(80):
        ms = T0 + rng.randrange(0, 30 * HOUR) + rng.randrange(1000)
        r: dict = {"@timestamp": ms if i % 3 else _iso(ms), "@type": "event", "@message": f"event {i}"}
        user = rng.choice(USERS)
        if user is not None:
            r["@fields.user.name"] = user
        elif i % 2:
            r["@fields.user.name"] = None  # present but null
        r["@fields.source.ip"] = rng.choice(SOURCES)
        if rng.random() < 0.9:
            r["@fields.destination.ip"] = rng.choice(DESTS)
        b = rng.randrange(0, 5000)
        kind = i % 5
        if kind == 0:
            r["@fields.bytes"] = str(b)  # a number stored as a string (FortiGate, CEF)
        elif kind == 1:
            r["@fields.bytes"] = b + 0.5
        elif kind in (2, 3):
            r["@fields.bytes"] = b
        # kind 4: no bytes
        r["@fields.event.category"] = rng.choice(["authentication", "network", "process"])
        r["@fields.event.outcome"] = rng.choice(["success", "failure", "failure"])
        r["@fields.host.name"] = rng.choice(HOSTS)
        r["@fields.process.name"] = rng.choice(PROCS)
        r["@fields.geo.country"] = rng.choice(COUNTRIES)
        r["@fields.port"] = rng.choice([22, 443, "443", 3389, 80])
        if i % 4 == 0:
            r["@tags"] = rng.sample(["vpn", "admin", "ext", "test"], rng.randrange(1, 3))
        out.append(r)
    return out


RECORDS: list[dict] = _make_records()


def documents(records: list[dict] | None = None) -> list[dict]:
    """The records nested as a source sends them (``@fields`` an object)."""
    docs = []
    for r in RECORDS if records is None else records:
        doc: dict = {}
        for path, v in r.items():
            parts = path.split(".") if path.startswith("@fields.") else [path]
            node = doc
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            node[parts[-1]] = v
        docs.append(doc)
    return docs


# -- the reference's own reading of values (independent of seclake) --------------------------

_NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def num(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and _NUM.match(v):
        return int(v) if re.match(r"^[+-]?\d+$", v) else float(v)
    return None


def ms(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        return int(datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() * 1000)
    return None


def f(r, name):
    """A field by the name a query writes: ``user.name`` is ``@fields.user.name``."""
    return r.get(name if name.startswith("@") else "@fields." + name)


def group(records, key):
    out = defaultdict(list)
    for r in records:
        out[key(r)].append(r)
    return out


def nums(rs, name):
    return [n for n in (num(f(r, name)) for r in rs) if n is not None]


def pct(values, p):
    v = sorted(values)
    if not v:
        return None
    rank = p / 100 * (len(v) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def total(values):
    if not values:
        return None
    return sum(values) if all(isinstance(x, int) for x in values) else float(sum(values))


def in_cidr(v, block):
    try:
        return ip_address(v) in ip_network(block)
    except (ValueError, TypeError):
        return None


def nulls_last(v):
    return (v is None, v if v is not None else 0)


@dataclass(frozen=True)
class Golden:
    query: str
    reference: Callable[[list[dict]], tuple[list[str], list[list]]]
    ordered: bool = False


Q: list[Golden] = []


def golden(query: str, ordered: bool = False):
    def register(fn):
        Q.append(Golden(query, fn, ordered))
        return fn

    return register


# -- STATS ------------------------------------------------------------------------------------


@golden("| STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[len(rs)]]


@golden("| STATS n = COUNT(*) BY user.name")
def _(rs):
    return ["n", "user.name"], [[len(g), k] for k, g in group(rs, lambda r: f(r, "user.name")).items()]


@golden("event.outcome:failure | STATS failures = COUNT(*) BY user.name, source.ip")
def _(rs):
    rs = [r for r in rs if f(r, "event.outcome") == "failure"]
    g = group(rs, lambda r: (f(r, "user.name"), f(r, "source.ip")))
    return ["failures", "user.name", "source.ip"], [[len(v), *k] for k, v in g.items()]


@golden("| STATS COUNT(bytes), COUNT(user.name), COUNT(@tags)")
def _(rs):
    tags = sum(len(f(r, "@tags") or []) for r in rs)
    return ["COUNT(bytes)", "COUNT(user.name)", "COUNT(@tags)"], [
        [sum(f(r, "bytes") is not None for r in rs), sum(f(r, "user.name") is not None for r in rs), tags]
    ]


@golden("| STATS users = COUNT_DISTINCT(user.name), hosts = COUNT_DISTINCT(host.name)")
def _(rs):
    return ["users", "hosts"], [[len({f(r, "user.name") for r in rs} - {None}), len({f(r, "host.name") for r in rs} - {None})]]


@golden("| STATS COUNT_DISTINCT(port)")
def _(rs):
    # 443 and "443" are one value: grouping reads numbers written as strings as numbers.
    return ["COUNT_DISTINCT(port)"], [[len({num(v) for v in (f(r, "port") for r in rs) if v is not None})]]


@golden("| STATS c = COUNT(*) BY port")
def _(rs):
    g = group(rs, lambda r: num(f(r, "port")))
    return ["c", "port"], [[len(v), k] for k, v in g.items()]


@golden("| STATS total = SUM(bytes) BY destination.ip")
def _(rs):
    g = group(rs, lambda r: f(r, "destination.ip"))
    return ["total", "destination.ip"], [[total(nums(v, "bytes")), k] for k, v in g.items()]


@golden("| STATS SUM(port)")
def _(rs):
    return ["SUM(port)"], [[total(nums(rs, "port"))]]


@golden("| STATS avg = AVG(bytes), lo = MIN(bytes), hi = MAX(bytes) BY host.name")
def _(rs):
    rows = []
    for k, v in group(rs, lambda r: f(r, "host.name")).items():
        n = nums(v, "bytes")
        rows.append([sum(n) / len(n) if n else None, min(n) if n else None, max(n) if n else None, k])
    return ["avg", "lo", "hi", "host.name"], rows


@golden("| STATS MEDIAN(bytes), PERCENTILE(bytes, 95), PERCENTILE(bytes, 0), PERCENTILE(bytes, 100)")
def _(rs):
    n = nums(rs, "bytes")
    return ["MEDIAN(bytes)", "PERCENTILE(bytes, 95)", "PERCENTILE(bytes, 0)", "PERCENTILE(bytes, 100)"], [
        [pct(n, 50), pct(n, 95), pct(n, 0), pct(n, 100)]
    ]


@golden("| STATS p = PERCENTILE(bytes, 99.5) BY event.category")
def _(rs):
    g = group(rs, lambda r: f(r, "event.category"))
    return ["p", "event.category"], [[pct(nums(v, "bytes"), 99.5), k] for k, v in g.items()]


@golden("| STATS hosts = VALUES(host.name) BY process.name")
def _(rs):
    rows = []
    for k, v in group(rs, lambda r: f(r, "process.name")).items():
        vals = sorted({f(r, "host.name") for r in v} - {None})
        rows.append([vals[0] if len(vals) == 1 else vals, k])
    return ["hosts", "process.name"], rows


@golden('| STATS top = TOP(bytes, 3, "desc"), bottom = TOP(bytes, 2, "asc")')
def _(rs):
    n = sorted(nums(rs, "bytes"))
    return ["top", "bottom"], [[n[::-1][:3], n[:2]]]


@golden("| STATS c = COUNT(*) BY BUCKET(@timestamp, 1 hour)")
def _(rs):
    g = group(rs, lambda r: ms(f(r, "@timestamp")) // HOUR * HOUR)
    return ["c", "BUCKET(@timestamp, 1 hour)"], [[len(v), _iso(k)] for k, v in g.items()]


@golden("| STATS bytes_out = SUM(bytes) BY destination.ip, hour = DATE_TRUNC(1 hour, @timestamp)")
def _(rs):
    g = group(rs, lambda r: (f(r, "destination.ip"), ms(f(r, "@timestamp")) // HOUR * HOUR))
    return ["bytes_out", "destination.ip", "hour"], [[total(nums(v, "bytes")), k[0], _iso(k[1])] for k, v in g.items()]


@golden("| STATS c = COUNT(*) BY day = BUCKET(@timestamp, 1 day)")
def _(rs):
    day = 24 * HOUR
    g = group(rs, lambda r: ms(f(r, "@timestamp")) // day * day)
    return ["c", "day"], [[len(v), _iso(k)] for k, v in g.items()]


@golden("| STATS c = COUNT(*) BY @tags")
def _(rs):
    counts: dict = defaultdict(int)
    for r in rs:
        tags = f(r, "@tags")
        for t in set(tags) if tags else [None]:
            counts[t] += 1
    return ["c", "@tags"], [[c, k] for k, c in counts.items()]


@golden("| STATS countries = COUNT_DISTINCT(geo.country) BY user.name | WHERE countries > 3 | SORT user.name", ordered=True)
def _(rs):
    g = group(rs, lambda r: f(r, "user.name"))
    rows = [[len({f(r, "geo.country") for r in v} - {None}), k] for k, v in g.items()]
    rows = [r for r in rows if r[0] > 3]
    return ["countries", "user.name"], sorted(rows, key=lambda r: nulls_last(r[1]))


@golden("| STATS hosts = COUNT_DISTINCT(host.name) BY process.name | SORT hosts DESC, process.name", ordered=True)
def _(rs):
    g = group(rs, lambda r: f(r, "process.name"))
    rows = [[len({f(r, "host.name") for r in v}), k] for k, v in g.items()]
    return ["hosts", "process.name"], sorted(rows, key=lambda r: (-r[0], r[1]))


@golden("| STATS rate = SUM(bytes) / COUNT(*), n = COUNT(*) BY event.outcome")
def _(rs):
    rows = []
    for k, v in group(rs, lambda r: f(r, "event.outcome")).items():
        s = total(nums(v, "bytes"))
        rows.append([None if s is None else (s // len(v) if isinstance(s, int) else s / len(v)), len(v), k])
    return ["rate", "n", "event.outcome"], rows


@golden("| WHERE bytes > 4000 | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if (num(f(r, "bytes")) or -1) > 4000)]]


@golden("| STATS n = COUNT(*) BY user.name, event.outcome | WHERE n >= 3 | SORT n DESC, user.name ASC NULLS FIRST, event.outcome", ordered=True)
def _(rs):
    g = group(rs, lambda r: (f(r, "user.name"), f(r, "event.outcome")))
    rows = [[len(v), *k] for k, v in g.items() if len(v) >= 3]
    return ["n", "user.name", "event.outcome"], sorted(rows, key=lambda r: (-r[0], r[1] is not None, r[1] or "", r[2]))


@golden("| STATS BY host.name")
def _(rs):
    return ["host.name"], [[k] for k in {f(r, "host.name") for r in rs}]


@golden("| STATS first = MIN(@timestamp), last = MAX(@timestamp) BY host.name")
def _(rs):
    rows = []
    for k, v in group(rs, lambda r: f(r, "host.name")).items():
        t = [ms(f(r, "@timestamp")) for r in v]
        rows.append([_iso(min(t)), _iso(max(t)), k])
    return ["first", "last", "host.name"], rows


@golden("| STATS MIN(user.name), MAX(user.name)")
def _(rs):
    u = [f(r, "user.name") for r in rs if f(r, "user.name") is not None]
    return ["MIN(user.name)", "MAX(user.name)"], [[min(u), max(u)]]


@golden("| EVAL kb = bytes / 1024 | STATS SUM(kb) BY event.category")
def _(rs):
    rows = []
    for k, v in group(rs, lambda r: f(r, "event.category")).items():
        vals = []
        for r in v:
            b = num(f(r, "bytes"))
            if b is None:
                continue
            vals.append(int(b / 1024) if isinstance(b, int) else b / 1024)
        rows.append([total(vals), k])
    return ["SUM(kb)", "event.category"], rows


@golden("| WHERE bytes IS NULL | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if f(r, "bytes") is None)]]


@golden("| STATS c = COUNT(*) BY internal = CIDR_MATCH(source.ip, \"10.0.0.0/8\", \"192.168.0.0/16\")")
def _(rs):
    g = group(rs, lambda r: bool(in_cidr(f(r, "source.ip"), "10.0.0.0/8") or in_cidr(f(r, "source.ip"), "192.168.0.0/16"))
              if ":" not in f(r, "source.ip") else False)
    return ["c", "internal"], [[len(v), k] for k, v in g.items()]


@golden("| STATS c = COUNT(*) BY u = TO_LOWER(user.name)")
def _(rs):
    g = group(rs, lambda r: f(r, "user.name").lower() if f(r, "user.name") else None)
    return ["c", "u"], [[len(v), k] for k, v in g.items()]


@golden("| STATS c = COUNT(*) BY p = TO_LONG(port)")
def _(rs):
    g = group(rs, lambda r: num(f(r, "port")))
    return ["c", "p"], [[len(v), k] for k, v in g.items()]


@golden("| STATS c = COUNT(*) BY b = BUCKET(bytes, 1000)")
def _(rs):
    def b(r):
        x = num(f(r, "bytes"))
        return None if x is None else (math.floor(x / 1000) * 1000)

    g = group(rs, b)
    return ["c", "b"], [[len(v), k] for k, v in g.items()]


@golden("| STATS c = COUNT(*) BY size = CASE(bytes > 3000, \"large\", bytes > 1000, \"medium\", \"small\")")
def _(rs):
    def size(r):
        x = num(f(r, "bytes"))
        if x is not None and x > 3000:
            return "large"
        if x is not None and x > 1000:
            return "medium"
        return "small"

    g = group(rs, size)
    return ["c", "size"], [[len(v), k] for k, v in g.items()]


# -- WHERE, EVAL and rows ------------------------------------------------------------------------

_KEEP = "| KEEP @timestamp, user.name, bytes"


def _rows(rs, keep=("@timestamp", "user.name", "bytes"), key=None):
    rs = sorted(rs, key=lambda r: -ms(f(r, "@timestamp"))) if key is None else sorted(rs, key=key)
    out = []
    for r in rs:
        row = []
        for k in keep:
            v = f(r, k)
            # A column of numbers, some written as strings, is a numeric column.
            row.append(_iso(ms(v)) if k == "@timestamp" else num(v) if k == "bytes" else v)
        out.append(row)
    return out


_COLS = ["@timestamp", "@fields.user.name", "@fields.bytes"]


@golden("| WHERE user.name == \"alice\" " + _KEEP, ordered=True)
def _(rs):
    return _COLS, _rows([r for r in rs if f(r, "user.name") == "alice"])


@golden("| WHERE user.name != \"alice\" " + _KEEP, ordered=True)
def _(rs):
    return _COLS, _rows([r for r in rs if f(r, "user.name") not in (None, "alice")])


@golden("| WHERE bytes >= 2500 AND bytes < 3500 " + _KEEP, ordered=True)
def _(rs):
    return _COLS, _rows([r for r in rs if num(f(r, "bytes")) is not None and 2500 <= num(f(r, "bytes")) < 3500])


@golden("| WHERE port == 443 | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if num(f(r, "port")) == 443)]]


@golden("| WHERE port == \"443\" | STATS COUNT(*)")
def _(rs):
    # A string compared with a number compares as a number; two strings as strings.
    return ["COUNT(*)"], [[sum(1 for r in rs if f(r, "port") == "443" or f(r, "port") == 443)]]


@golden("| WHERE NOT user.name == \"bob\" | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if f(r, "user.name") is not None and f(r, "user.name") != "bob")]]


@golden("| WHERE user.name IS NULL OR bytes IS NULL | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if f(r, "user.name") is None or f(r, "bytes") is None)]]


@golden("| WHERE user.name IS NOT NULL AND bytes IS NOT NULL | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if f(r, "user.name") is not None and f(r, "bytes") is not None)]]


@golden("| WHERE user.name IN (\"alice\", \"Dave\", null) | STATS COUNT(*) BY user.name")
def _(rs):
    g = group([r for r in rs if f(r, "user.name") in ("alice", "Dave")], lambda r: f(r, "user.name"))
    return ["COUNT(*)", "user.name"], [[len(v), k] for k, v in g.items()]


@golden("| WHERE user.name NOT IN (\"alice\", \"bob\") | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if f(r, "user.name") is not None and f(r, "user.name") not in ("alice", "bob"))]]


@golden("| WHERE process.name LIKE \"*.exe\" | STATS COUNT(*) BY process.name")
def _(rs):
    g = group([r for r in rs if f(r, "process.name").endswith(".exe")], lambda r: f(r, "process.name"))
    return ["COUNT(*)", "process.name"], [[len(v), k] for k, v in g.items()]


@golden("| WHERE host.name NOT LIKE \"web-?\" | STATS COUNT(*) BY host.name")
def _(rs):
    g = group([r for r in rs if not re.fullmatch(r"web-.", f(r, "host.name"))], lambda r: f(r, "host.name"))
    return ["COUNT(*)", "host.name"], [[len(v), k] for k, v in g.items()]


@golden("| WHERE host.name RLIKE \"(web|db)-[0-9]\" | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if re.fullmatch(r"(web|db)-[0-9]", f(r, "host.name")))]]


@golden("| WHERE CIDR_MATCH(destination.ip, \"10.0.0.0/8\") | STATS COUNT(*) BY destination.ip")
def _(rs):
    g = group([r for r in rs if in_cidr(f(r, "destination.ip"), "10.0.0.0/8")], lambda r: f(r, "destination.ip"))
    return ["COUNT(*)", "destination.ip"], [[len(v), k] for k, v in g.items()]


@golden("| WHERE @timestamp >= \"2026-11-20T12:00:00Z\" AND @timestamp < \"2026-11-20T18:00:00Z\" | STATS COUNT(*)")
def _(rs):
    lo, hi = T0 + 12 * HOUR, T0 + 18 * HOUR
    return ["COUNT(*)"], [[sum(1 for r in rs if lo <= ms(f(r, "@timestamp")) < hi)]]


@golden("| EVAL since = NOW() - 3650 days | WHERE @timestamp < NOW() AND @timestamp > since | STATS COUNT(*)")
def _(rs):
    # The same answer whenever the query runs after the records (within ten years): a server's
    # clock is not the test's. NOW()'s exact value is tested in test_execution.
    return ["COUNT(*)"], [[len(rs)]]


@golden("| EVAL double = bytes * 2, half = bytes / 2, rest = bytes % 7 | KEEP double, half, rest | SORT double DESC NULLS LAST | LIMIT 10", ordered=True)
def _(rs):
    rows = []
    for r in rs:
        b = num(f(r, "bytes"))
        if b is None:
            rows.append([None, None, None])
        elif isinstance(b, int):
            rows.append([b * 2, b // 2, b % 7])
        else:
            rows.append([b * 2, b / 2, math.fmod(b, 7)])
    rows.sort(key=lambda r: (r[0] is None, -(r[0] or 0)))
    return ["double", "half", "rest"], rows[:10]


@golden("| EVAL who = CONCAT(user.name, \"@\", host.name), n = LENGTH(user.name) | KEEP who, n | SORT who | LIMIT 15", ordered=True)
def _(rs):
    rows = []
    for r in rs:
        u = f(r, "user.name")
        rows.append([None if u is None else f"{u}@{f(r, 'host.name')}", None if u is None else len(u)])
    rows.sort(key=lambda r: nulls_last(r[0]))
    return ["who", "n"], rows[:15]


@golden("| EVAL u = TO_UPPER(user.name), s = SUBSTRING(process.name, 1, 3), e = SUBSTRING(process.name, -3) | STATS COUNT(*) BY u, s, e")
def _(rs):
    g = group(rs, lambda r: (f(r, "user.name").upper() if f(r, "user.name") else None, f(r, "process.name")[:3], f(r, "process.name")[-3:]))
    return ["COUNT(*)", "u", "s", "e"], [[len(v), *k] for k, v in g.items()]


@golden("| EVAL who = COALESCE(user.name, \"unknown\") | STATS COUNT(*) BY who")
def _(rs):
    g = group(rs, lambda r: f(r, "user.name") if f(r, "user.name") is not None else "unknown")
    return ["COUNT(*)", "who"], [[len(v), k] for k, v in g.items()]


@golden("| EVAL kb = ROUND(bytes / 1024.0, 1), a = ABS(0 - bytes) | STATS MAX(kb), MAX(a)")
def _(rs):
    n = nums(rs, "bytes")
    kb = [round(x / 1024.0 + 0.0, 1) for x in n]
    return ["MAX(kb)", "MAX(a)"], [[max(kb), max(n)]]


@golden("| EVAL s = TO_STRING(port), d = TO_DOUBLE(port) | STATS COUNT(*) BY s, d")
def _(rs):
    g = group(rs, lambda r: (str(f(r, "port")), float(num(f(r, "port")))))
    return ["COUNT(*)", "s", "d"], [[len(v), *k] for k, v in g.items()]


@golden("| EVAL big = bytes > 2500 | STATS COUNT(*) BY big")
def _(rs):
    g = group(rs, lambda r: None if num(f(r, "bytes")) is None else num(f(r, "bytes")) > 2500)
    return ["COUNT(*)", "big"], [[len(v), k] for k, v in g.items()]


@golden("| EVAL h = DATE_TRUNC(1 hour, @timestamp) | WHERE h == \"2026-11-20T05:00:00Z\" | STATS COUNT(*)")
def _(rs):
    return ["COUNT(*)"], [[sum(1 for r in rs if ms(f(r, "@timestamp")) // HOUR * HOUR == T0 + 5 * HOUR)]]


@golden("| SORT bytes DESC NULLS LAST, @timestamp | KEEP @timestamp, user.name, bytes | LIMIT 12", ordered=True)
def _(rs):
    return _COLS, _rows(rs, key=lambda r: (num(f(r, "bytes")) is None, -(num(f(r, "bytes")) or 0), ms(f(r, "@timestamp"))))[:12]


@golden("| SORT TO_LONG(bytes) ASC NULLS FIRST, @timestamp DESC | KEEP @timestamp, user.name, bytes | LIMIT 12", ordered=True)
def _(rs):
    def key(r):
        b = num(f(r, "bytes"))
        return (b is not None, int(b) if b is not None else 0, -ms(f(r, "@timestamp")))

    return _COLS, _rows(rs, key=key)[:12]


@golden("| WHERE event.category == \"network\" | KEEP @timestamp, user.name, bytes | LIMIT 5", ordered=True)
def _(rs):
    return _COLS, _rows([r for r in rs if f(r, "event.category") == "network"])[:5]


@golden("| KEEP @timestamp, user.name, bytes | LIMIT 7", ordered=True)
def _(rs):
    return _COLS, _rows(rs)[:7]


@golden("| RENAME user.name AS user | KEEP user, host.name | SORT user NULLS FIRST, host.name DESC | LIMIT 10", ordered=True)
def _(rs):
    rows = [[f(r, "user.name"), f(r, "host.name")] for r in rs]
    rows.sort(key=lambda r: r[1], reverse=True)
    rows.sort(key=lambda r: (r[0] is not None, r[0] or ""))
    return ["user", "@fields.host.name"], rows[:10]


@golden("| KEEP user.name, geo.* | DROP geo.country | LIMIT 3", ordered=True)
def _(rs):
    return ["@fields.user.name"], [[f(r, "user.name")] for r in sorted(rs, key=lambda r: -ms(f(r, "@timestamp")))][:3]


@golden("| STATS n = COUNT(*) BY host.name | EVAL share = n * 100 / " + str(80) + " | SORT share DESC, host.name | KEEP host.name, share", ordered=True)
def _(rs):
    g = group(rs, lambda r: f(r, "host.name"))
    rows = [[k, len(v) * 100 // 80] for k, v in g.items()]
    return ["host.name", "share"], sorted(rows, key=lambda r: (-r[1], r[0]))


@golden("| STATS n = COUNT(*) BY host.name | RENAME n AS events | SORT events DESC, host.name | LIMIT 2", ordered=True)
def _(rs):
    g = group(rs, lambda r: f(r, "host.name"))
    rows = sorted([[len(v), k] for k, v in g.items()], key=lambda r: (-r[0], r[1]))
    return ["events", "host.name"], rows[:2]


@golden("| STATS n = COUNT(*) BY host.name, user.name | DROP host.name | STATS groups = COUNT(*), most = MAX(n)")
def _(rs):
    g = group(rs, lambda r: (f(r, "host.name"), f(r, "user.name")))
    return ["groups", "most"], [[len(g), max(len(v) for v in g.values())]]


@golden("| WHERE bytes > 1000 | EVAL out = bytes | WHERE out < 2000 | STATS s = SUM(out)")
def _(rs):
    n = [b for b in nums(rs, "bytes") if 1000 < b < 2000]
    return ["s"], [[total(n)]]


@golden("| WHERE user.name LIKE \"a*\" OR user.name LIKE \"D*\" | STATS COUNT(*) BY user.name")
def _(rs):
    g = group([r for r in rs if (f(r, "user.name") or "")[:1] in ("a", "D")], lambda r: f(r, "user.name"))
    return ["COUNT(*)", "user.name"], [[len(v), k] for k, v in g.items()]


@golden("event.category:authentication AND event.outcome:failure | STATS failures = COUNT(*), users = COUNT_DISTINCT(user.name) BY source.ip | WHERE failures > 2 | SORT failures DESC, source.ip | LIMIT 20", ordered=True)
def _(rs):
    rs = [r for r in rs if f(r, "event.category") == "authentication" and f(r, "event.outcome") == "failure"]
    g = group(rs, lambda r: f(r, "source.ip"))
    rows = [[len(v), len({f(r, "user.name") for r in v} - {None}), k] for k, v in g.items() if len(v) > 2]
    return ["failures", "users", "source.ip"], sorted(rows, key=lambda r: (-r[0], r[2]))[:20]


@golden('| STATS failures = COUNT(*) WHERE event.outcome == "failure", total = COUNT(*), out = SUM(bytes) WHERE bytes > 2000 BY user.name')
def _(rs):
    rows = []
    for k, v in group(rs, lambda r: f(r, "user.name")).items():
        big = [b for b in nums(v, "bytes") if b > 2000]
        rows.append([sum(1 for r in v if f(r, "event.outcome") == "failure"), len(v), total(big), k])
    return ["failures", "total", "out", "user.name"], rows


@golden('| STATS COUNT(*) WHERE CIDR_MATCH(source.ip, "10.0.0.0/8"), COUNT(*)')
def _(rs):
    inside = sum(1 for r in rs if in_cidr(f(r, "source.ip"), "10.0.0.0/8"))
    return ['COUNT(*) WHERE CIDR_MATCH(source.ip, "10.0.0.0/8")', "COUNT(*)"], [[inside, len(rs)]]


QUERIES: list[Golden] = Q


# -- comparing an answer with the reference --------------------------------------------------


def _close(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _canon(row):
    return repr([round(x, 6) if isinstance(x, float) else x for x in row])


def agree(columns: list[dict], values: list[list], g: Golden, records: list[dict]) -> str | None:
    """None when the answer is the reference's, else what differs."""
    names, rows = g.reference(records)
    got_names = [c["name"] for c in columns]
    if got_names != names:
        return f"columns {got_names} != {names}"
    if len(values) != len(rows):
        return f"{len(values)} rows != {len(rows)}: {values[:5]} vs {rows[:5]}"
    got, want = list(values), list(rows)
    if not g.ordered:
        got, want = sorted(got, key=_canon), sorted(want, key=_canon)
    for i, (a, b) in enumerate(zip(got, want)):
        if not _close(a, b):
            return f"row {i}: {a} != {b}"
    return None
