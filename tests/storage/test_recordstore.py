"""The records file of a format-2 split: every record back by docId, byte for byte."""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.demo import generate
from seclake.ingest.parser import parse_line
from seclake.storage import recordstore
from seclake.storage.recordstore import RecordStore, StoreError


def _records(n: int, start: int = 1) -> list[tuple[int, bytes]]:
    return [(start + 3 * i, orjson.dumps({"@message": f"accepted password for user{i % 50} port {i}", "i": i}))
            for i in range(n)]


def test_every_record_comes_back_by_docid_and_in_order(tmp_path):
    records = _records(5000)
    path = tmp_path / recordstore.FILE_NAME
    size = recordstore.write(path, reversed(records))  # any order in, docId order out
    assert size == path.stat().st_size
    store = RecordStore(path)
    assert list(store) == records
    for docid, body in records[::97]:
        assert store.get(docid) == body
    # Not held: before the first, between two, after the last.
    assert store.get(0) is None and store.get(2) is None and store.get(records[-1][0] + 1) is None


def _demo_records() -> list[tuple[int, bytes]]:
    out = []
    for line in generate(days=1, end_ms=1_793_491_200_000, events_per_day=3000, seed=5):
        parsed = parse_line(line.line, vendor=line.vendor, dataset=line.dataset, received_ms=0, customer=line.customer)
        if parsed is not None and line.dataset == "event":
            out.append((len(out) + 1, orjson.dumps(parsed[0])))
    return out


def test_parsed_logs_take_a_third_of_their_json_with_the_trained_dictionary(tmp_path, monkeypatch):
    records = _demo_records()
    raw = sum(len(b) for _, b in records)
    with_dict = recordstore.write(tmp_path / "a", records)
    monkeypatch.setattr(recordstore, "MIN_SAMPLES", 10**9)  # no dictionary
    without = recordstore.write(tmp_path / "b", records)
    assert with_dict < raw / 3
    assert with_dict < 0.8 * without


def test_a_dictionary_that_saves_nothing_is_left_out(tmp_path):
    # Nothing to learn from random bytes: a dictionary would be dead weight.
    rng = random.Random(7)
    records = [(i, rng.randbytes(300)) for i in range(1, 2000)]
    path = tmp_path / recordstore.FILE_NAME
    recordstore.write(path, records)
    assert int.from_bytes(path.read_bytes()[-8:], "little") == 0  # the footer's dictionary length
    assert list(RecordStore(path)) == records


def test_a_few_records_are_stored_without_a_dictionary(tmp_path):
    records = _records(3)
    path = tmp_path / recordstore.FILE_NAME
    recordstore.write(path, records)
    assert list(RecordStore(path)) == records


def test_huge_records_are_stored_whole_and_train_on_a_bounded_sample(tmp_path, monkeypatch):
    seen = []
    real = recordstore.zstandard.train_dictionary

    def train(size, samples, **kw):
        seen.append(sum(map(len, samples)))
        return real(size, samples, **kw)

    monkeypatch.setattr(recordstore.zstandard, "train_dictionary", train)
    records = [(i, orjson.dumps({"i": i, "x": f"user{i % 7} " * 40_000})) for i in range(1, 101)]  # ~360 KB each
    path = tmp_path / recordstore.FILE_NAME
    recordstore.write(path, records)
    assert seen and seen[0] <= recordstore.SAMPLE_BYTES + recordstore.SAMPLE_RECORD_BYTES
    assert list(RecordStore(path)) == records


def test_a_record_larger_than_a_block_is_a_block_of_its_own(tmp_path):
    big = orjson.dumps({"x": "y" * (3 * recordstore.BLOCK_BYTES)})
    records = [(1, b"{}"), (2, big), (3, b"{}")]
    path = tmp_path / recordstore.FILE_NAME
    recordstore.write(path, records)
    store = RecordStore(path)
    assert store.get(2) == big and list(store) == records


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.integers(0, 2**63), st.binary(max_size=3000), min_size=1, max_size=200))
def test_any_bodies_come_back(tmp_path_factory, bodies):
    path = tmp_path_factory.mktemp("store") / recordstore.FILE_NAME
    recordstore.write(path, bodies.items())
    store = RecordStore(path)
    assert dict(store) == bodies
    assert all(store.get(d) == b for d, b in bodies.items())


def test_many_threads_read_one_store_at_once(tmp_path):
    # Searches fetch records from request and leaf threads at the same time.
    records = _demo_records()
    path = tmp_path / recordstore.FILE_NAME
    recordstore.write(path, records)
    store = RecordStore(path)
    recordstore._cache.clear()  # an empty cache: the threads decompress blocks side by side

    def reader(seed: int) -> bool:
        rng = random.Random(seed)
        return all(store.get(d) == b for d, b in rng.sample(records, 300))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(reader, range(16)))


def _resident_kb(path) -> int:
    """This process's resident memory of its mappings of ``path`` (smaps' Rss)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
                inside = line.rstrip().endswith(str(path))
            elif inside and head[0] == "Rss:":
                total += int(head[1])
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")
def test_a_pass_over_the_whole_file_does_not_keep_it_resident(tmp_path):
    # A merge, a split's columns computed or a scanned split read every page of the file: the
    # process kept them all (the server's memory grew by the files it had read through).
    rng = random.Random(7)
    records = [(i + 1, orjson.dumps({"i": i, "blob": rng.randbytes(1500).hex()})) for i in range(8000)]
    path = tmp_path / recordstore.FILE_NAME
    size = recordstore.write(path, records)
    assert size > 8 * 1024 * 1024
    store = RecordStore(path)
    assert sum(1 for _ in store) == len(records)
    assert _resident_kb(path) * 1024 < 2 * recordstore.RELEASE_BYTES  # at most the last step's pages
    # A lookup after the pass maps its block again.
    assert store.get(records[4321][0]) == records[4321][1]


def test_a_damaged_file_says_what_and_where(tmp_path):
    path = tmp_path / recordstore.FILE_NAME
    recordstore.write(path, _records(2000))
    data = bytearray(path.read_bytes())
    path.write_bytes(data[:10])
    with pytest.raises(StoreError, match="too short"):
        RecordStore(path)
    path.write_bytes(b"x" * 100)
    with pytest.raises(StoreError, match="not a seclake records file"):
        RecordStore(path)
    # A block's bytes overwritten: reading it names the block and its offset.
    store_bytes = bytes(data)
    dict_len = int.from_bytes(store_bytes[-8:], "little")
    data[dict_len + 5:dict_len + 60] = b"\xff" * 55
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"block 0 at byte \d+ is damaged"):
        RecordStore(path).get(1)
