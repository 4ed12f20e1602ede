"""POST /api/import/{vendor}: raw logs in, counts out, records searchable."""

from __future__ import annotations

import gzip
import time

import pytest

from tests.conftest import error_of, status_of

SSHD = [
    "<38>Nov 21 10:00:01 bastion sshd[411]: Failed password for invalid user admin from 203.0.113.7 port 51234 ssh2",
    "<38>Nov 21 10:00:02 bastion sshd[411]: Accepted password for alice from 198.51.100.4 port 40022 ssh2",
]


def _import(server, token, vendor, body: bytes, params=None, headers=None):
    h = {"Servicetoken": token, "Content-Type": "text/plain"}
    h.update(headers or {})
    return server.http.post(f"/api/import/{vendor}", content=body, params=params or {}, headers=h)


def _search(server, token, query, data_type="event"):
    kargs = {
        "partition": "default",
        "dataType": data_type,
        "options": {"dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": 50, "dataType": data_type},
    }
    return server.call("ds/get_index_zoom_histogram_lv3", kargs, token)


def _wait_for(server, token, query, n, data_type="event", timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        res = _search(server, token, query, data_type)
        if res["hits"]["total"] >= n or time.monotonic() > deadline:
            return res
        time.sleep(0.05)


@pytest.fixture(params=["request thread", "parse workers"])
def start_server(request, start_server):
    """Every test here runs twice: bodies parsed in the request thread, and
    in worker processes (``parse_workers``; every body, however small)."""
    if request.param == "request thread":
        return start_server

    def start(*args, **overrides):
        overrides.setdefault("parse_workers", 1)
        srv = start_server(*args, **overrides)
        srv.services.parsers.min_bytes = 0
        return srv

    return start


@pytest.fixture
def lake_server(start_server):
    return start_server()


def test_imported_lines_are_counted_and_searchable_within_two_seconds(lake_server):
    token = lake_server.login()
    body = ("\n".join(SSHD) + "\nthis line means nothing to any parser\n\n").encode()
    started = time.monotonic()
    r = _import(lake_server, token, "sshd", body, {"customer": "acme"})
    assert r.status_code == 200, r.text
    report = r.json()["response"]
    assert (report["accepted"], report["raw"], report["rejected"], report["stored"]) == (2, 1, 0, 3)
    parsers = lake_server.services.parsers
    assert parsers is None or parsers.parsed == 1  # with parse workers, it was parsed in one
    res = _wait_for(lake_server, token, "@source:sshd", 3)
    assert time.monotonic() - started < 2.5
    assert res["hits"]["total"] == 3
    sources = [h["_source"] for h in res["hits"]["hits"]]
    assert {s["@sender"] for s in sources} >= {"bastion"}
    assert all(s["@customer"] == "acme" and s["@tags"] == ["sshd"] for s in sources)
    raw = [s for s in sources if s["@message"] == "this line means nothing to any parser"]
    assert len(raw) == 1 and raw[0]["@fields"] == {}
    ids = [h["_id"] for h in res["hits"]["hits"]]
    assert len(set(ids)) == 3
    # docIds are opaque; behind them are the three consecutive log sequences of this import.
    shown = lake_server.services.record_ids
    first = shown.sequence(report["firstDocId"])
    assert {h["docId"] for h in res["hits"]["hits"]} == {shown.number(n) for n in (first, first + 1, first + 2)}
    assert shown.sequence(report["lastDocId"]) == first + 2
    assert {h["_id"] for h in res["hits"]["hits"]} == {f"{h['docId']:016x}" for h in res["hits"]["hits"]}


def test_record_ids_reveal_neither_order_nor_how_much_others_sent(start_server, tmp_path):
    """The log sequence is global: shown as is, the gap between two of one
    customer's imports would count what every other customer sent between them."""
    data = tmp_path / "ids"
    server = start_server(data)
    token = server.login()
    reports = []
    for i in range(6):
        r = _import(server, token, "sshd", "\n".join(SSHD).encode(), {"customer": "acme" if i % 2 else "globex"})
        reports.append(r.json()["response"])
    mine = [(x["firstDocId"], x["lastDocId"]) for x in reports[1::2]]
    numbers = [n for pair in mine for n in pair]
    # Not the sequences (1..12), and no two a small step apart: neither within
    # an import nor from one of acme's imports to the next (globex's between).
    assert not set(numbers) & set(range(1, 13))
    assert all(abs(b - a) > 1000 for a, b in zip(numbers, numbers[1:]))
    assert all(0 < n < 2**53 for n in numbers), "docIds stay exact in JavaScript numbers"
    hits = _wait_for(server, token, "@customer:acme", 6)["hits"]["hits"]
    before = {h["_id"]: h["docId"] for h in hits}
    server.stop()
    # The key is the deployment's: the same records keep their ids after a restart.
    again = start_server(data)
    hits = _wait_for(again, again.login(), "@customer:acme", 6)["hits"]["hits"]
    assert {h["_id"]: h["docId"] for h in hits} == before
    # The setting turns it off: ids are the log sequences themselves.
    plain = start_server(tmp_path / "plain", opaque_record_ids=False)
    r = _import(plain, plain.login(), "sshd", "\n".join(SSHD).encode())
    assert (r.json()["response"]["firstDocId"], r.json()["response"]["lastDocId"]) == (1, 2)


def test_gzip_by_header_and_by_magic_bytes(lake_server):
    token = lake_server.login()
    packed = gzip.compress("\n".join(SSHD).encode())
    r1 = _import(lake_server, token, "gz1", packed, headers={"Content-Encoding": "gzip"})
    r2 = _import(lake_server, token, "gz2", packed)
    assert r1.json()["response"]["accepted"] == 2
    assert r2.json()["response"]["accepted"] == 2
    assert _wait_for(lake_server, token, "@source:gz1 OR @source:gz2", 4)["hits"]["total"] == 4


def test_flows_in_both_layouts_land_in_the_flow_dataset(lake_server):
    token = lake_server.login()
    lines = [
        '{"@timestamp": 1763700000000, "@type": "flow", "@fields": {"sip": "10.0.0.5", "dip": "8.8.8.8", "dp": 53, "totalB": 120}}',
        '{"@timestamp": 1763700000001, "@type": "flow", "@metaflow": {"flow": {"sip": "10.0.0.6", "dip": "1.1.1.1", "dp": 443, "totalB": 9000}}}',
    ]
    r = _import(lake_server, token, "netflow", "\n".join(lines).encode(), {"type": "flow"})
    assert r.json()["response"]["accepted"] == 2
    res = _wait_for(lake_server, token, 'sip:"10.0.0.0/8" AND totalB:>100', 2, data_type="flow")
    assert res["hits"]["total"] == 2
    assert {h["_type"] for h in res["hits"]["hits"]} == {"flow"}
    assert _search(lake_server, token, "@metaflow.flow.dp:443", "flow")["hits"]["total"] == 1
    # Flows are not events.
    assert _search(lake_server, token, "sip:10.0.0.5")["hits"]["total"] == 0


def test_a_body_in_the_charset_its_content_type_names_keeps_its_letters(lake_server):
    # Java's HTTP clients (the fluency_import_api client among them) send text
    # as ISO-8859-1 and say so; read as UTF-8, every accented letter was lost.
    token = lake_server.login()
    line = "user=jos\u00e9 action=login city=M\u00fcnchen note=\u00bfqu\u00e9?"
    latin = line.encode("iso-8859-1")
    for vendor, body, encoding in (("latin1", latin, None), ("latin1gz", gzip.compress(latin), "gzip"),
                                   ("cp1252", "user=\u20acuro".encode("cp1252"), None)):
        charset = "windows-1252" if vendor == "cp1252" else "ISO-8859-1"
        headers = {"Content-Type": f"text/plain; charset={charset}"}
        if encoding:
            headers["Content-Encoding"] = encoding
        r = _import(lake_server, token, vendor, body, headers=headers)
        assert r.status_code == 200 and r.json()["response"]["accepted"] == 1, r.text
    hits = _wait_for(lake_server, token, "@source:latin1 OR @source:latin1gz OR @source:cp1252", 3)["hits"]["hits"]
    messages = sorted(h["_source"]["@message"] for h in hits)
    assert messages == sorted([line, line, "user=\u20acuro"])
    assert _search(lake_server, token, 'user:"jos\u00e9"')["hits"]["total"] == 2
    # Without a charset (or with UTF-8's), bytes are UTF-8 as before: the Latin-1 byte is replaced.
    r = _import(lake_server, token, "plain", latin, headers={"Content-Type": "text/plain"})
    assert r.json()["response"]["accepted"] == 1
    plain = _wait_for(lake_server, token, "@source:plain", 1)["hits"]["hits"][0]["_source"]["@message"]
    assert plain.startswith("user=jos\ufffd ")


@pytest.mark.parametrize(
    ("vendor", "params", "headers", "needle"),
    [
        ("bad vendor!", {}, {}, "vendor"),
        ("ok", {}, {"Content-Type": "text/plain; charset=no-such-charset"}, "Content-Type"),
        ("ok", {}, {"Content-Type": "text/plain; charset=base64"}, "not a text encoding"),
        ("ok", {"type": "alert"}, {}, "type"),
        ("ok", {"format": "xml"}, {}, "format"),
        ("ok", {"customer": "x" * 500}, {}, "customer"),
        ("ok", {}, {"Content-Encoding": "br"}, "Content-Encoding"),
    ],
)
def test_bad_import_parameters_say_what_is_wrong(lake_server, vendor, params, headers, needle):
    token = lake_server.login()
    msg = error_of(_import(lake_server, token, vendor, b"a=1\n", params, headers), 400)
    assert needle in msg


def test_a_broken_gzip_body_is_an_error_and_stores_nothing(lake_server):
    token = lake_server.login()
    packed = gzip.compress(("\n".join(SSHD) * 50).encode())[:-20]
    msg = error_of(_import(lake_server, token, "broken", packed, headers={"Content-Encoding": "gzip"}), 400)
    assert "gzip" in msg
    time.sleep(1.5)
    assert _search(lake_server, token, "@source:broken")["hits"]["total"] == 0


def test_import_body_cap_and_gzip_bomb(start_server):
    srv = start_server(max_import_bytes=10_000)
    token = srv.login()
    assert "limit" in error_of(_import(srv, token, "big", b"a=1\n" * 5000), 413)
    bomb = gzip.compress(b"a" * 5_000_000)
    assert len(bomb) < 10_000
    assert "after decompression" in error_of(_import(srv, token, "bomb", bomb), 413)


def test_tiny_lines_cannot_blow_up_memory(start_server):
    # Issue 17.3: 4 MB of 2-byte lines, 4,100 bytes gzipped, took the process
    # tree to +3.1 GB for 73 s. Each line costs a record of Python objects,
    # so the import is measured first and refused, at once, storing nothing.
    srv = start_server()
    token = srv.login()
    bomb = gzip.compress(b"a\n" * 2_000_000)
    assert len(bomb) < 10_000
    started = time.monotonic()
    msg = error_of(_import(srv, token, "tiny", bomb, headers={"Content-Encoding": "gzip"}), 413)
    assert time.monotonic() - started < 5
    assert "2000000 lines" in msg and "max_import_memory_mb" in msg and "Nothing was stored" in msg
    time.sleep(1.2)
    assert _search(srv, token, "@source:tiny")["hits"]["total"] == 0


def test_the_import_memory_budget_is_a_setting(start_server):
    srv = start_server(max_import_memory_mb=16)
    token = srv.login()
    lines = [f"{{\"n\": {i}, \"user\": \"u{i % 50}\"}}" for i in range(20_000)]
    # 10,000 lines of ~27 bytes: ~10 MB by the estimate, under 16 MB.
    r = _import(srv, token, "budget", "\n".join(lines[:10_000]).encode())
    assert r.status_code == 200 and r.json()["response"]["accepted"] == 10_000, r.text
    assert "above the limit of 16 MB" in error_of(_import(srv, token, "budget2", "\n".join(lines).encode()), 413)
    assert _wait_for(srv, token, "@source:budget", 10_000)["hits"]["total"] == 10_000
    assert _search(srv, token, "@source:budget2")["hits"]["total"] == 0


def test_import_needs_a_token_and_the_ingest_permission(lake_server, new_name):
    assert status_of(lake_server.http.post("/api/import/x", content=b"a=1")) == 401
    admin = lake_server.login()
    analyst = lake_server.add_user(admin, new_name("analyst"), ["analyst"])
    feeder = lake_server.add_user(admin, new_name("feeder"), ["ingest"])
    assert "import/x" in error_of(_import(lake_server, analyst, "x", b"a=1"), 403)
    assert _import(lake_server, feeder, "x", b"a=1").status_code == 200
    # An ingest-only identity cannot read what it sends.
    r = lake_server.post("ds/get_index_zoom_histogram_lv3", {"options": {"dateFacetField": "@timestamp"}}, feeder)
    assert status_of(r) == 403


# -- Idempotency-Key ----------------------------------------------------------

KEYED = b'{"@timestamp": 1763683200000, "@message": "keyed one"}\n{"@timestamp": 1763683200001, "@message": "keyed two"}\n'


def test_a_retry_with_the_same_key_is_answered_from_memory_and_stored_once(lake_server):
    token = lake_server.login()
    key = {"Idempotency-Key": '"b3a1c2d4-0000-4000-8000-000000000001"'}
    first = _import(lake_server, token, "keyed", KEYED, {"customer": "acme"}, headers=key)
    assert first.status_code == 200, first.text
    assert "Idempotent-Replayed" not in first.headers
    again = _import(lake_server, token, "keyed", gzip.compress(KEYED), {"customer": "acme"}, headers=key)
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    # Another body under the same key: refused, nothing stored.
    other = _import(lake_server, token, "keyed", KEYED + b'{"@message": "three"}\n', {"customer": "acme"}, headers=key)
    assert "was used for a different import" in error_of(other, 422)
    assert "nothing was stored" in other.json()["error"]
    lake_server.services.lake.flush()
    res = _wait_for(lake_server, token, "@source:keyed", 2)
    assert sorted(h["_source"]["@message"] for h in res["hits"]["hits"]) == ["keyed one", "keyed two"]
    assert res["hits"]["total"] == 2


def test_keys_belong_to_their_user(lake_server):
    admin = lake_server.login()
    other = lake_server.add_user(admin, "feeder", ["ingest"])
    key = {"Idempotency-Key": "shared-name"}
    a = _import(lake_server, admin, "scoped", KEYED, headers=key)
    b = _import(lake_server, other, "scoped", KEYED + b'{"@message": "three"}\n', headers=key)
    # Not a reuse (422) nor a replay of the admin's import: feeder's key is its own.
    assert a.status_code == b.status_code == 200 and "Idempotent-Replayed" not in b.headers
    assert b.json()["response"]["stored"] == 3
    assert _wait_for(lake_server, admin, "@source:scoped", 5)["hits"]["total"] == 5


@pytest.mark.parametrize("value", ["has space", "x" * 256, "", "ünïcode"])
def test_a_bad_key_is_refused_naming_the_header(lake_server, value):
    token = lake_server.login()
    r = _import(lake_server, token, "badkey", KEYED, headers={"Idempotency-Key": value.encode("utf-8")})
    assert error_of(r, 400).startswith("import/badkey: Idempotency-Key: must be 1 to 255 characters")
