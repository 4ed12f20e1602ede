"""The split builder: batches built in worker processes or in-process give the same splits."""

from __future__ import annotations

import orjson

from seclake.storage.builder import SplitBuilder
from seclake.storage.split import Split

T0 = 1_763_683_200_000


def _payload(first: int, n: int) -> list[tuple[int, bytes]]:
    return [(i, orjson.dumps({"@timestamp": T0 + i, "@message": f"event {i}", "@fields": {"n": i, "ip": "10.0.0.1"}}))
            for i in range(first, first + n)]


def test_build_all_returns_each_split_in_order_from_workers_and_in_process(tmp_path):
    builder = SplitBuilder(threshold=4, workers=2)
    jobs = [("event", _payload(1, 6), tmp_path / "a", "a"), ("event", _payload(7, 2), tmp_path / "b", "b"),
            ("flow", _payload(9, 5), tmp_path / "c", "c")]
    try:
        metas = builder.build_all(jobs)
    finally:
        builder.close()
    assert [(m.split_id, m.dataset, m.num_records, m.seq_min, m.seq_max) for m in metas] == [
        ("a", "event", 6, 1, 6), ("b", "event", 2, 7, 8), ("c", "flow", 5, 9, 13)]
    for (_ds, payload, dest, _sid), meta in zip(jobs, metas):
        split = Split(dest)
        assert split.bodies() == payload
        assert meta.fields.numbers == {"@fields.n": "n0"} and meta.fields.ips == {"@fields.ip": "ip0"}


def test_a_merge_in_a_worker_keeps_every_record_and_its_stored_json(tmp_path):
    builder = SplitBuilder(threshold=4)
    try:
        builder.build_all([("event", _payload(1, 3), tmp_path / "a", "a"), ("event", _payload(4, 3), tmp_path / "b", "b")])
        meta = builder.merge("event", [Split(tmp_path / "b"), Split(tmp_path / "a")], tmp_path / "m", "m")
    finally:
        builder.close()
    assert (meta.num_records, meta.seq_min, meta.seq_max) == (6, 1, 6)
    assert Split(tmp_path / "m").bodies() == _payload(1, 6)
