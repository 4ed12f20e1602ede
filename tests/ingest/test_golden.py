"""Golden cases: real-looking lines of each format and the records they become.

The parameters of each fixture live in ``PARAMS``; expected results in
``fixtures/<name>.json`` (see fixtures/README.md for regenerating them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from seclake.ingest import IngestCounts, LineRejected, iter_lines, iter_records, parse_line

FIXTURES = Path(__file__).parent / "fixtures"
RECEIVED_MS = 1714564801000  # 2024-05-01T12:00:01Z

PARAMS: dict[str, dict] = {
    "sshd": {"vendor": "linux", "dataset": "event", "fmt": "auto"},
    "authlog": {"vendor": "linux", "dataset": "event", "fmt": "auto"},
    "winsecurity": {"vendor": "windows", "dataset": "event", "fmt": "auto"},
    "sysmon": {"vendor": "windows", "dataset": "event", "fmt": "auto"},
    "auditd": {"vendor": "linux", "dataset": "event", "fmt": "auto"},
    "leef": {"vendor": "qradar", "dataset": "event", "fmt": "auto"},
    "asa": {"vendor": "cisco", "dataset": "event", "fmt": "auto"},
    "panos": {"vendor": "paloalto", "dataset": "event", "fmt": "auto"},
    "zeek": {"vendor": "zeek", "dataset": "event", "fmt": "auto"},
    "zeek_flow": {"vendor": "zeek", "dataset": "flow", "fmt": "auto", "file": "zeek"},
    "suricata": {"vendor": "suricata", "dataset": "event", "fmt": "auto"},
    "cloudtrail": {"vendor": "aws", "dataset": "event", "fmt": "auto"},
    "okta": {"vendor": "okta", "dataset": "event", "fmt": "auto"},
    "entra": {"vendor": "azure", "dataset": "event", "fmt": "auto"},
    "rfc5424": {"vendor": "syslog", "dataset": "event", "fmt": "auto"},
    "fortigate": {"vendor": "fortigate", "dataset": "event", "fmt": "auto", "customer": "acme"},
    "cef": {"vendor": "ids", "dataset": "event", "fmt": "auto"},
    "json_shaped": {"vendor": "seclake", "dataset": "event", "fmt": "auto"},
    "json_flat": {"vendor": "winlog", "dataset": "event", "fmt": "jsonl"},
    "flows": {"vendor": "netflow", "dataset": "flow", "fmt": "auto"},
    "hostile_json": {"vendor": "fuzz", "dataset": "event", "fmt": "auto"},
    "raw": {"vendor": "misc", "dataset": "event", "fmt": "auto"},
}


def _params(name: str) -> dict:
    params = {"customer": None, **PARAMS[name], "received_ms": RECEIVED_MS}
    params.pop("file", None)  # another fixture's lines, imported with other parameters
    return params


def _lines(name: str) -> bytes:
    return (FIXTURES / f"{PARAMS[name].get('file', name)}.txt").read_bytes()


def _parse_fixture(name: str) -> dict:
    params = _params(name)
    results: dict[str, dict] = {}
    raw = _lines(name)
    for number, text, _truncated in iter_lines(raw, max_bytes=1 << 20):
        try:
            out = parse_line(text, **params)
        except LineRejected as exc:
            results[str(number)] = {"rejected": exc.message}
            continue
        assert out is not None
        record, understood = out
        results[str(number)] = {"understood": understood, "record": record}
    return {"params": params, "lines": results}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_golden(name: str) -> None:
    got = _parse_fixture(name)
    path = FIXTURES / f"{name}.json"
    if os.environ.get("REGEN_INGEST_GOLDEN"):
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert got["params"] == expected["params"]
    for number, want in expected["lines"].items():
        assert got["lines"].get(number) == want, f"{name}.txt line {number}"
    assert got["lines"].keys() == expected["lines"].keys()


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_golden_through_iter_records(name: str) -> None:
    """The streaming entry point gives the same records and counts them."""
    expected = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    params = _params(name)
    counts = IngestCounts()
    raw = _lines(name)
    records = list(iter_records(iter_lines(raw, max_bytes=1 << 20), counts=counts, **params))
    want = [v["record"] for v in expected["lines"].values() if "record" in v]
    assert records == want
    lines = expected["lines"].values()
    assert counts.accepted == sum(1 for v in lines if v.get("understood") is True)
    assert counts.raw == sum(1 for v in lines if v.get("understood") is False)
    assert counts.rejected == sum(1 for v in lines if "rejected" in v)
    rejected = [(n, v["rejected"]) for n, v in expected["lines"].items() if "rejected" in v]
    assert counts.reasons == [f"line {n}: {reason}" for n, reason in rejected][: counts.max_reasons]
