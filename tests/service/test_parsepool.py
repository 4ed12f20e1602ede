"""Parsing in worker processes (service/parsepool.py): what the request thread would read, from real spawned workers.

Every golden fixture of tests/ingest goes through both paths: the same
records (as the log would replay them), line numbers, counts, reasons and
idempotency digest. Reader errors cross the process boundary as
themselves, and a worker killed under a body is replaced.
"""

from __future__ import annotations

import gzip
import os
import signal
import threading
import time

import orjson
import pytest

from seclake.detect.rulebook import read_rule_files, starter_pack
from seclake.detect.ruleset import RuleSet
from seclake.errors import PayloadTooLarge, Unavailable, ValidationFailed
from seclake.ingest.parser import iter_numbered
from seclake.ingest.reader import IngestCounts, iter_lines
from seclake.service.bulk import read_bulk
from seclake.service.idempotency import RequestDigest
from seclake.service.parsepool import ParsePool
from tests.ingest.test_golden import PARAMS, RECEIVED_MS, _lines

MAX_BYTES = 64 << 20


@pytest.fixture(scope="module")
def pool():
    pool = ParsePool(2, min_bytes=0)
    yield pool
    pool.close()


def _in_thread(body: bytes, target: dict, compressed=None):
    counts = IngestCounts()
    digest = RequestDigest(**target)
    lines = digest.lines(iter_lines(body, compressed=compressed, max_bytes=MAX_BYTES))
    numbered = list(iter_numbered(lines, received_ms=RECEIVED_MS, counts=counts, **target))
    return numbered, counts, digest.take()


def _target(name: str) -> dict:
    params = PARAMS[name]
    return {"vendor": params["vendor"], "dataset": params["dataset"], "fmt": params["fmt"],
            "customer": params.get("customer")}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_a_worker_reads_every_source_as_the_request_thread_does(pool, name):
    target = _target(name)
    body = _lines(name)
    numbered, counts, digest = _in_thread(body, target)
    parsed = pool.parse(body, compressed=None, max_bytes=MAX_BYTES, target=target, received_ms=RECEIVED_MS, keyed=True)
    assert parsed.numbers == [number for number, _ in numbered]
    # The records as the log stores and replays them.
    assert [orjson.loads(b) for b in parsed.prepared.bodies] == [orjson.loads(orjson.dumps(r)) for _, r in numbered]
    assert parsed.counts == counts and parsed.digest == digest
    assert parsed.numbers  # every fixture has records


def test_a_worker_finds_the_rules_each_record_matches_as_the_detector_would(pool):
    rules, errors = read_rule_files(starter_pack())
    assert not errors
    ruleset = RuleSet(rules, version=7)
    found = 0
    for name in sorted(PARAMS):
        target = _target(name)
        numbered, _, _ = _in_thread(_lines(name), target)
        parsed = pool.parse(_lines(name), compressed=None, max_bytes=MAX_BYTES, target=target,
                            received_ms=RECEIVED_MS, keyed=False, rules=ruleset)
        expected = {i: m for i, (_, record) in enumerate(numbered) if (m := ruleset.matching(target["dataset"], record))}
        assert parsed.prepared.matched == (7, expected), name
        found += len(expected)
    assert found >= 30  # the starter rules match lines of the fixtures (failed logins, denied traffic...)


def test_a_worker_reads_a_bulk_body_as_the_request_thread_does(pool):
    rules, _ = read_rule_files(starter_pack())
    ruleset = RuleSet(rules, version=3)
    actions = [
        b'{"index":{"_index":"winlog","_id":"a"}}', b'{"EventID":4625,"IpAddress":"198.51.100.9","message":"m"}',
        b'{"delete":{"_index":"winlog","_id":"a"}}',
        b'{"index":{"_index":"bad name!"}}', b'{"message":"x"}',
        b'{"create":{}}', b'{"@fields":"not an object"}',
        b'{"index":{"_index":"flows-zeek"}}', b'{"sip":"10.0.0.1","dip":"10.0.0.2","dp":443}',
        b'{"index":{}}', b'not json at all',
    ]
    body = b"\n".join(actions) + b"\n"
    expected = list(read_bulk(body, "fallback", compressed=False, max_bytes=MAX_BYTES, received_ms=RECEIVED_MS))
    parsed = pool.parse_bulk(body, "fallback", compressed=False, max_bytes=MAX_BYTES, received_ms=RECEIVED_MS,
                             rules=ruleset)
    bodies = parsed.prepared.bodies
    got = [e if e.error is not None else e._replace(record=orjson.loads(bodies[e.record])) for e in parsed.entries]
    assert got == [e if e.error is not None else e._replace(record=orjson.loads(orjson.dumps(e.record)))
                   for e in expected]
    assert [e.error["type"] if e.error else e.dataset for e in got] == [
        "event", "illegal_argument_exception", "invalid_index_name_exception", "document_parsing_exception", "flow",
        "event"]
    records = [e for e in expected if e.error is None]
    assert parsed.prepared.matched == (3, {i: m for i, e in enumerate(records)
                                           if (m := ruleset.matching(e.dataset, e.record))})
    # An error of the body as a whole (an action line that is not JSON) reaches the caller as itself.
    with pytest.raises(ValidationFailed, match="line 1: expected an action"):
        pool.parse_bulk(b"nope\n", None, compressed=False, max_bytes=MAX_BYTES, received_ms=RECEIVED_MS)


def test_gzip_truncation_reasons_and_no_digest_unless_keyed(pool):
    lines = [b'{"n": %d}' % i for i in range(3000)] + [b'{"@tags": 5}', b"x" * 300_000, b'{"last": 1}']
    body = gzip.compress(b"\n".join(lines) + b"\n")
    target = {"vendor": "app", "dataset": "event", "fmt": "jsonl", "customer": "acme"}
    numbered, counts, _ = _in_thread(body, target)
    parsed = pool.parse(body, compressed=True, max_bytes=MAX_BYTES, target=target, received_ms=RECEIVED_MS, keyed=False)
    assert parsed.counts == counts and parsed.digest is None
    assert counts.rejected == 1 and counts.reasons[0].startswith("line 3001: ") and counts.truncated == 1
    assert parsed.numbers[-1] == 3003 and orjson.loads(parsed.prepared.bodies[-1])["@customer"] == "acme"


def test_reader_errors_reach_the_caller_with_their_type_and_message(pool):
    target = {"vendor": "app", "dataset": "event", "fmt": "auto", "customer": None}
    with pytest.raises(ValidationFailed) as bad:
        pool.parse(b"\x1f\x8b\x08\x00garbage", compressed=True, max_bytes=MAX_BYTES, target=target,
                   received_ms=RECEIVED_MS, keyed=False)
    with pytest.raises(ValidationFailed) as expected:
        list(iter_lines(b"\x1f\x8b\x08\x00garbage", compressed=True, max_bytes=MAX_BYTES))
    assert (bad.value.field, bad.value.message) == (expected.value.field, expected.value.message)
    bomb = gzip.compress(b"a" * (2 << 20))
    with pytest.raises(PayloadTooLarge, match="larger than 1048576 bytes .after decompression"):
        pool.parse(bomb, compressed=True, max_bytes=1 << 20, target=target, received_ms=RECEIVED_MS, keyed=False)


def _workers() -> list[int]:
    """This process's live parse workers (they name themselves); not one killed but not yet
    reaped (a zombie: killing it again would be no death at all)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            state, parent = stat.rsplit(")", 1)[1].split()[:2]
            if "(seclake-parse)" in stat and int(parent) == os.getpid() and state != "Z":
                out.append(int(entry))
    return out


def _killer(stop: threading.Event, limit: int, pool: ParsePool, delay: float = 0.0) -> list[int]:
    """Kill up to ``limit`` of ``pool``'s workers as they start, after ``delay``; the pids killed.
    (Not every process named a parse worker: another pool's may start or end meanwhile.)"""
    killed: list[int] = []

    def run() -> None:
        time.sleep(delay)
        while not stop.is_set() and len(killed) < limit:
            for pid in set(pool.pids()) & set(_workers()):  # started: it has named itself
                if pid not in killed and len(killed) < limit:
                    # Counted first: the pool may see the death and the test read the
                    # count before this thread runs again.
                    killed.append(pid)
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    threading.Thread(target=run, daemon=True).start()
    return killed


BIG = b"\n".join(b"<38>Nov 21 10:00:01 bastion sshd[411]: Accepted password for u%d from 198.51.100.4 port 40022 ssh2" % i
                 for i in range(200_000))
SSHD = {"vendor": "linux", "dataset": "event", "fmt": "auto", "customer": None}


def test_a_worker_killed_under_a_body_is_replaced_and_the_body_parsed_again():
    others = set(_workers())
    pool = ParsePool(1, min_bytes=0)
    try:
        pool.parse(b"warm\n", compressed=None, max_bytes=MAX_BYTES, target=SSHD, received_ms=RECEIVED_MS, keyed=False)
        stop = threading.Event()
        killed = _killer(stop, 1, pool, delay=0.2)  # the one worker, busy with the body (seconds of work)
        parsed = pool.parse(BIG, compressed=False, max_bytes=MAX_BYTES, target=SSHD, received_ms=RECEIVED_MS, keyed=False)
        stop.set()
        assert len(killed) == 1 and pool.lost == 1
        assert len(parsed.numbers) == 200_000 and parsed.counts.accepted == 200_000
        assert set(_workers()) - others - set(killed)  # a new worker, alive
    finally:
        pool.close()


def test_a_body_whose_workers_die_twice_is_refused_and_the_pool_recovers():
    pool = ParsePool(1, min_bytes=0)
    try:
        stop = threading.Event()
        killed = _killer(stop, 2, pool)
        with pytest.raises(Unavailable, match="died each time.*nothing was stored"):
            pool.parse(BIG, compressed=False, max_bytes=MAX_BYTES, target=SSHD, received_ms=RECEIVED_MS, keyed=False)
        stop.set()
        assert len(killed) == 2 and pool.lost == 2
        parsed = pool.parse(b"x\n", compressed=None, max_bytes=MAX_BYTES, target=SSHD, received_ms=RECEIVED_MS, keyed=False)
        assert parsed.counts.raw == 1
    finally:
        pool.close()


def test_small_bodies_and_streams_stay_in_the_request_thread():
    pool = ParsePool(1)
    assert not pool.takes(b"x" * (pool.min_bytes - 1)) and pool.takes(b"x" * pool.min_bytes)
    assert not pool.takes(open(os.devnull, "rb"))
    pool.close()


def _parts(body: bytes, size: int) -> list[list]:
    lines = list(iter_lines(body, max_bytes=MAX_BYTES))
    return [lines[i : i + size] for i in range(0, len(lines), size)]


def test_parts_of_a_file_come_back_in_order_as_one_parse_of_the_whole_would_read_them(pool):
    # Every golden fixture joined into one file, cut into parts of 7 lines: more parts than the pool
    # keeps in flight, so they are sent as earlier ones come back.
    target = {"vendor": "mixed", "dataset": "event", "fmt": "auto", "customer": "acme"}
    body = b"".join(_lines(name) for name in sorted(PARAMS) if PARAMS[name]["dataset"] == "event")
    body += b'{"@tags": 5}\n' + b"x" * 300_000 + b"\n"  # a rejected line and a truncated one, at the end
    numbered, counts, _ = _in_thread(body, target)
    parts = list(pool.parse_parts(_parts(body, 7), target=target, received_ms=RECEIVED_MS, rules=lambda: None))
    assert len(parts) > 4 * pool.workers
    assert [n for p in parts for n in p.numbers] == [number for number, _ in numbered]
    assert [orjson.loads(b) for p in parts for b in p.prepared.bodies] == [orjson.loads(orjson.dumps(r)) for _, r in numbered]
    total = IngestCounts()
    for p in parts:
        total.add(p.counts)
    assert total == counts and counts.truncated == 1
    assert counts.reasons[-1] == f"line {numbered[-1][0] - 1}: @tags: expected an array of strings, got number"


def test_a_part_whose_worker_died_is_sent_again_with_the_parts_behind_it():
    pool = ParsePool(1, min_bytes=0)
    try:
        parts = _parts(BIG, 50_000)
        stop = threading.Event()
        killed = _killer(stop, 1, pool, delay=0.3)
        parsed = list(pool.parse_parts(parts, target=SSHD, received_ms=RECEIVED_MS, rules=lambda: None))
        stop.set()
        assert len(killed) == 1 and pool.lost == 1
        assert [n for p in parsed for n in p.numbers] == list(range(1, 200_001))
        stop = threading.Event()
        killed = _killer(stop, 2, pool)  # the live worker, then the one that takes the part again
        with pytest.raises(Unavailable, match="died each time.*the parts before it are stored"):
            list(pool.parse_parts(parts, target=SSHD, received_ms=RECEIVED_MS, rules=lambda: None))
        stop.set()
        assert len(killed) == 2
    finally:
        pool.close()


def test_an_error_reading_the_parts_comes_after_every_part_read_before_it(pool):
    def parts():
        yield from _parts(BIG[:200_000], 300)  # ~1,900 lines: more parts than the pool keeps in flight
        raise ValidationFailed("body", "gzip data ends early, after 200000 decompressed bytes")

    got = []
    with pytest.raises(ValidationFailed, match="gzip data ends early"):
        for parsed in pool.parse_parts(parts(), target=SSHD, received_ms=RECEIVED_MS, rules=lambda: None):
            got.append(parsed)
    assert [n for p in got for n in p.numbers] == [line.number for part in _parts(BIG[:200_000], 300) for line in part]
