"""The flusher: one record's value never stops a deployment's indexing (issue 39)."""

from __future__ import annotations

import json
import time

ZONED = "fe80::80ac:4126:fa58:1b81%10"  # a link-local address with its zone id, as Windows events carry it
T0 = 1_763_700_000_000


def _import(server, token, lines: list[dict], vendor: str = "winlog"):
    body = "\n".join(json.dumps(line) for line in lines).encode()
    r = server.http.post(f"/api/import/{vendor}", content=body,
                         headers={"Servicetoken": token, "Content-Type": "text/plain"})
    assert r.status_code == 200, r.text
    assert r.json()["response"]["accepted"] == len(lines), r.text
    return r.json()["response"]


def _total(server, token, query: str) -> int:
    kargs = {
        "partition": "default",
        "dataType": "event",
        "options": {"dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": 5, "dataType": "event"},
    }
    return server.call("ds/get_index_zoom_histogram_lv3", kargs, token)["hits"]["total"]


def _wait_total(server, token, query: str, n: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while (total := _total(server, token, query)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return total


def _events(tag: str, n: int, start: int = 0) -> list[dict]:
    addresses = ["10.0.0.7", "2001:db8::1", "192.168.1.20", "fe80::1"]
    return [{"@timestamp": T0 + start + i, "tag": tag, "ip": addresses[i % len(addresses)], "n": i}
            for i in range(n)]


def test_an_address_with_a_zone_id_is_searchable_and_holds_back_nothing(start_server):
    # Issue 39: the zone id made the split's address column refuse the value,
    # the build failed, and neither that import nor any after it became searchable.
    server = start_server()
    token = server.login()
    lines = _events("first", 70)
    lines.insert(35, {"@timestamp": T0 + 999, "tag": "first", "ip": ZONED, "n": 999})
    _import(server, token, lines)
    assert _wait_total(server, token, "tag:first", 71) == 71
    # The value is found as written: by term, by its text, and as an address in its block.
    assert _total(server, token, f'ip:"{ZONED}"') == 1
    assert _total(server, token, '"fa58"') == 1
    assert _total(server, token, 'ip:"fe80::/10"') == 1 + 70 // 4  # the zoned address and every fe80::1
    assert _total(server, token, 'ip:"10.0.0.0/8"') == 18
    # What comes after it is indexed too.
    _import(server, token, _events("later", 5, start=10_000))
    assert _wait_total(server, token, "tag:later", 5) == 5
