"""The write-ahead log keeps every acknowledged entry, once, across crashes."""

from pathlib import Path

import pytest

from seclake.storage.wal import FORMAT_LINE, Logged, WriteAheadLog


def _open(d: Path, checkpoint: int = 0, **kw) -> WriteAheadLog:
    wal = WriteAheadLog(d, **kw)
    wal.open(checkpoint)
    return wal


def test_entries_come_back_in_order_with_their_sequence(tmp_path):
    wal = _open(tmp_path)
    assert wal.append([("event", {"a": 1}), ("flow", {"b": 2})]) == (1, 2)
    assert wal.append([("event", {"c": 3})]) == (3, 3)
    wal.close()
    wal = _open(tmp_path)
    assert [(s, d, r) for s, d, r in wal.replay(0)] == [(1, "event", {"a": 1}), (2, "flow", {"b": 2}), (3, "event", {"c": 3})]
    assert [s for s, _, _ in wal.replay(2)] == [3]
    # Sequences continue after a restart, never reused.
    assert wal.append([("event", {"d": 4})]) == (4, 4)


def test_a_torn_tail_is_cut_and_earlier_entries_survive(tmp_path):
    wal = _open(tmp_path)
    wal.append([("event", {"n": i}) for i in range(5)])
    wal.close()
    seg = sorted(tmp_path.glob("*.wal"))[-1]
    data = seg.read_bytes()
    seg.write_bytes(data[:-7])  # a crash in the middle of the last entry
    wal = _open(tmp_path)
    assert [r["n"] for _, _, r in wal.replay(0)] == [0, 1, 2, 3]
    assert wal.append([("event", {"n": 99})]) == (5, 5)
    assert [r["n"] for _, _, r in wal.replay(0)] == [0, 1, 2, 3, 99]


def test_corrupt_bytes_in_the_last_entry_are_not_replayed(tmp_path):
    wal = _open(tmp_path)
    wal.append([("event", {"n": 1}), ("event", {"n": 2})])
    wal.close()
    seg = sorted(tmp_path.glob("*.wal"))[-1]
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF
    seg.write_bytes(bytes(data))
    wal = _open(tmp_path)
    assert [r["n"] for _, _, r in wal.replay(0)] == [1]


def test_checkpoint_sets_next_sequence_when_segments_are_gone(tmp_path):
    wal = _open(tmp_path, checkpoint=41)
    assert wal.append([("event", {})]) == (42, 42)


def test_trim_removes_only_fully_indexed_segments(tmp_path):
    wal = _open(tmp_path, segment_bytes=200)
    for i in range(10):
        wal.append([("event", {"n": i, "pad": "x" * 100})])
    before = len(list(tmp_path.glob("*.wal")))
    assert before > 3
    wal.trim(5)
    assert [r["n"] for _, _, r in wal.replay(5)] == [5, 6, 7, 8, 9]
    assert len(list(tmp_path.glob("*.wal"))) < before


def test_a_foreign_file_is_refused(tmp_path):
    (tmp_path / "00000000000000000001.wal").write_bytes(b"not a wal file at all, sorry\n")
    (tmp_path / "00000000000000000009.wal").write_bytes(FORMAT_LINE)
    with pytest.raises(ValueError, match="format line missing"):
        _open(tmp_path)


KEY = {"scope": "user:1:0", "key": "k", "digest": "d", "reply": {}, "records": 2, "at": 1}


def test_a_keyed_batch_keeps_its_key_and_replays_only_records(tmp_path):
    wal = _open(tmp_path)
    wal.append([("event", {"n": 0})])
    assert wal.append([("event", {"n": 1}), ("behavior", {"b": 1})], key=KEY) == (2, 3)
    wal.append([("event", {"n": 2})])
    wal.close()
    wal = _open(tmp_path)
    # The key entry takes no sequence number and is no record.
    assert [(s, r) for s, _, r in wal.replay(0)] == [(1, {"n": 0}), (2, {"n": 1}), (3, {"b": 1}), (4, {"n": 2})]
    assert wal.keys == [(2, {**KEY, "n": 2})]
    assert wal.append([("event", {"n": 3})]) == (5, 5)


def test_a_keyed_batch_cut_short_goes_whole_with_its_key(tmp_path):
    wal = _open(tmp_path)
    wal.append([("event", {"n": 0})])
    wal.append([("event", {"n": i, "pad": "x" * 50}) for i in (1, 2, 3)], key=KEY)
    wal.close()
    seg = sorted(tmp_path.glob("*.wal"))[-1]
    data = seg.read_bytes()
    seg.write_bytes(data[:-80])  # the crash tore the last record: the first two are whole
    wal = _open(tmp_path)
    assert [r["n"] for _, _, r in wal.replay(0)] == [0]
    assert wal.keys == []
    # The sequences of the lost batch are given again, as after any unacknowledged write.
    assert wal.append([("event", {"n": 9})]) == (2, 2)


def test_segments_of_the_first_format_are_still_read(tmp_path):
    wal = _open(tmp_path)
    wal.append([("event", {"n": 1})])
    wal.close()
    seg = sorted(tmp_path.glob("*.wal"))[-1]
    seg.write_bytes(seg.read_bytes().replace(FORMAT_LINE, b"seclake-wal 1\n", 1))
    wal = _open(tmp_path)
    assert [r["n"] for _, _, r in wal.replay(0)] == [1]


def test_a_keyed_append_that_fails_after_its_fsync_says_it_is_logged(tmp_path):
    wal = _open(tmp_path)

    def broken(assigned):
        raise RuntimeError("indexer queue gone")

    with pytest.raises(RuntimeError):  # without a key: as before
        wal.append([("event", {"n": 0})], on_assigned=broken)
    with pytest.raises(Logged) as caught:
        wal.append([("event", {"n": 1}), ("event", {"n": 2})], on_assigned=broken, key=KEY)
    assert (caught.value.first, caught.value.last) == (2, 3)
    wal.close()
    assert _open(tmp_path).keys == [(2, {**KEY, "n": 2})]
