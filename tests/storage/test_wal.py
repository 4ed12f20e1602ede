"""The write-ahead log keeps every acknowledged entry, once, across crashes."""

from pathlib import Path

import pytest

from tests import disk

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


def test_derived_entries_name_the_sequence_the_log_gave_and_land_in_the_same_write(tmp_path):
    wal = _open(tmp_path)
    wal.append([("event", {"a": 1})])
    seen = []

    def derive(first):
        seen.append(first)
        return [("behavior", {"of": first + i}) for i in range(2)]

    assert wal.append([("event", {"b": 2}), ("event", {"c": 3})], derive=derive) == (2, 5)
    assert seen == [2]
    wal.close()
    assert [(s, d, r) for s, d, r in _open(tmp_path).replay(1)] == [
        (2, "event", {"b": 2}), (3, "event", {"c": 3}), (4, "behavior", {"of": 2}), (5, "behavior", {"of": 3})]


def test_records_encoded_already_are_logged_as_given_and_the_rest_encoded_here(tmp_path):
    """A parse worker sends each record's JSON: the log writes those bytes, the same
    objects go on to be indexed, and what comes after them (behaviors) is encoded here."""
    wal = _open(tmp_path)
    given = [b'{"b":2,"a":1}', b'{"c":3}']
    seen = []
    first, last = wal.append([("event", {"a": 1, "b": 2}), ("event", {"c": 3})], bodies=given,
                             derive=lambda first: [("behavior", {"of": first})], on_assigned=seen.extend)
    assert (first, last) == (1, 3)
    assert [body for _, _, _, body in seen][:2] == given and seen[0][3] is given[0]
    wal.close()
    replayed = [(s, d, r) for s, d, r in _open(tmp_path).replay(0)]
    assert replayed == [(1, "event", {"b": 2, "a": 1}), (2, "event", {"c": 3}), (3, "behavior", {"of": 1})]
    assert list(replayed[0][2]) == ["b", "a"]  # the given bytes, not the record encoded again


def test_a_derive_that_fails_writes_nothing(tmp_path):
    wal = _open(tmp_path)

    def derive(first):
        raise RuntimeError("rules failed")

    with pytest.raises(RuntimeError):
        wal.append([("event", {"b": 2})], derive=derive)
    assert wal.append([("event", {"c": 3})]) == (1, 1)
    wal.close()
    assert [r for _, _, r in _open(tmp_path).replay(0)] == [{"c": 3}]


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


def test_a_segment_with_nothing_readable_is_quarantined_whole_and_the_log_opens(tmp_path):
    """Its name says which sequences it held: they are named lost, the bytes kept beside it."""
    junk = b"not a wal file at all, sorry\n"
    (tmp_path / "00000000000000000001.wal").write_bytes(junk)
    (tmp_path / "00000000000000000009.wal").write_bytes(FORMAT_LINE)
    wal = _open(tmp_path)
    assert list(wal.replay(0)) == []
    [damage] = wal.damage
    assert (damage["kind"], damage["lost"]) == ("damaged", (1, 8))
    assert (tmp_path / damage["quarantine"]).read_bytes() == junk
    assert wal.append([("event", {"n": 9})]) == (9, 9)


def test_a_segment_of_a_newer_format_is_refused_not_salvaged(tmp_path):
    (tmp_path / "00000000000000000001.wal").write_bytes(b"seclake-wal 7\n" + b"\x01" * 40)
    with pytest.raises(ValueError, match="newer seclake"):
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


# -- damage: one corrupt entry costs that entry; a failed write leaves nothing -------------


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x5A
    path.write_bytes(bytes(data))


def _offsets(path: Path) -> list[int]:
    """Where each entry starts in a segment."""
    from seclake.storage.wal import HEADER  # noqa: PLC0415

    data = path.read_bytes()
    pos, out = len(FORMAT_LINE), []
    while pos < len(data):
        out.append(pos)
        length = HEADER.unpack_from(data, pos)[0]
        pos += HEADER.size + length
    return out


@pytest.mark.parametrize("where", ["payload", "header"])
def test_a_flipped_byte_mid_segment_costs_that_entry_only_and_is_logged(tmp_path, caplog, where):
    """One flipped byte used to cut the log there at start, without a word:
    every acknowledged record after it was gone (issue 17, point 5)."""
    wal = _open(tmp_path)
    for b in range(6):
        wal.append([("event", {"batch": b, "n": i}) for i in range(10)])
    wal.close()
    seg = sorted(tmp_path.glob("*.wal"))[-1]
    start = _offsets(seg)[23]  # the 24th entry: sequence 24
    _flip(seg, start + (30 if where == "payload" else 2))
    with caplog.at_level("ERROR", logger="seclake.wal"):
        wal = _open(tmp_path)
    seqs = [s for s, _, _ in wal.replay(0)]
    assert seqs == [s for s in range(1, 61) if s != 24]
    assert [d["lost"] for d in wal.damage] == [(24, 24)] and wal.damage[0]["kind"] == "damaged"
    assert "records between seq 24 and 24 lost" in caplog.text
    # The log goes on after it, and says so again at the next start.
    assert wal.append([("event", {"after": True})]) == (61, 61)
    wal.close()
    assert [d["lost"] for d in _open(tmp_path).damage] == [(24, 24)]


def test_damage_in_an_older_segment_is_skipped_not_fatal(tmp_path):
    wal = _open(tmp_path, segment_bytes=300)
    for i in range(12):
        wal.append([("event", {"n": i})])
    wal.close()
    first = sorted(tmp_path.glob("*.wal"))[0]
    _flip(first, _offsets(first)[1] + 20)
    wal = _open(tmp_path, segment_bytes=300)
    assert [r["n"] for _, _, r in wal.replay(0)] == [0] + list(range(2, 12))
    assert wal.damage[0]["lost"] == (2, 2)


class _FullDisk:
    """A file whose writes land half, then fail as a full disk does: an
    injected ENOSPC (the tmpfs test in tests/api/test_durability.py fills a
    real one)."""

    def __init__(self, real):
        self.real = real

    def write(self, buf):
        self.real.write(bytes(buf[: len(buf) // 2]))
        self.real.flush()
        raise OSError(28, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_a_write_that_fails_leaves_nothing_and_later_writes_are_kept(tmp_path):
    from seclake.storage.wal import LogFull  # noqa: PLC0415

    wal = _open(tmp_path)
    wal.append([("event", {"n": i}) for i in range(3)])
    seg = sorted(tmp_path.glob("*.wal"))[-1]
    size = seg.stat().st_size
    real = wal._file
    wal._file = _FullDisk(real)
    with pytest.raises(LogFull, match="disk is full; nothing of this batch was stored"):
        wal.append([("event", {"refused": i}) for i in range(500)])
    assert seg.stat().st_size == size and wal.next_seq == 4
    wal._file = real
    assert wal.append([("event", {"n": 3})]) == (4, 4)  # space is back
    wal.close()
    wal = _open(tmp_path)
    assert [r for _, _, r in wal.replay(0)] == [{"n": i} for i in range(4)] and wal.damage == []


@pytest.mark.parametrize("records", [40, 200])
def test_a_batch_refused_by_a_real_full_disk_is_never_replayed_and_later_batches_are(tmp_path, records):
    """A refused write used to leave its bytes in the file object's buffer:
    the truncation's seek, or the next append once room came back, wrote
    them into the segment, so the batch answered 'nothing stored' was
    replayed after a restart, after torn entries (found under load by the
    full-disk test in tests/api/test_durability.py). A real tmpfs with a few
    bytes to spare, batches below and above the buffer's size."""
    from seclake.storage.wal import LogFull  # noqa: PLC0415

    with disk.small_disk(tmp_path / "disk", size="1m") as mounted:
        wal = _open(mounted / "wal")
        wal.append([("event", {"n": i}) for i in range(3)])
        filler = disk.fill(mounted, leave=100)
        with pytest.raises(LogFull):
            wal.append([("event", {"refused": i, "pad": "x" * 100}) for i in range(records)])
        filler.unlink()
        assert wal.append([("event", {"n": 3})]) == (4, 4)
        wal.close()
        wal = _open(mounted / "wal")
        assert [r for _, _, r in wal.replay(0)] == [{"n": i} for i in range(4)] and wal.damage == []
        wal.close()


def test_a_reopened_log_replays_from_any_point_across_segments_and_keyed_batches(tmp_path):
    # A start opens the log (only key entries decoded) and replays from the
    # lake's and the detector's positions (older segments skipped, older
    # entries not decoded): every position gives exactly the entries after it.
    wal = _open(tmp_path, segment_bytes=300)
    for i in range(6):
        wal.append([("event", {"n": 2 * i, "pad": "x" * 60}), ("event", {"n": 2 * i + 1})],
                   key={"key": f"k{i}"} if i % 2 else None)
    wal.close()
    assert len(list(tmp_path.glob("*.wal"))) > 2
    reopened = _open(tmp_path)
    assert reopened.next_seq == 13
    assert [k["key"] for _, k in reopened.keys] == ["k1", "k3", "k5"]
    for after in range(13):
        assert [s for s, _, _ in reopened.replay(after)] == list(range(after + 1, 13)), after
        assert [r["n"] for _, _, r in reopened.replay(after)] == list(range(after, 12)), after


# -- issue 39: a damaged log never stops the start, and damage is told truthfully ----------


def _segments(d: Path) -> list[Path]:
    return sorted(d.glob("*.wal"))


def _quarantined(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if ".damaged-" in p.name or ".torn-" in p.name)


@pytest.mark.parametrize("which", ["closed", "live"])
def test_a_flipped_byte_in_a_format_line_costs_no_record_and_is_quarantined(tmp_path, caplog, which):
    """It used to stop every start (ValueError: format line missing): the
    entries after it are whole, and the segment's name says where it begins."""
    wal = _open(tmp_path, segment_bytes=400)
    for i in range(12):
        wal.append([("event", {"n": i, "pad": "x" * 40})])
    wal.close()
    segments = _segments(tmp_path)
    assert len(segments) > 2
    seg = segments[0] if which == "closed" else segments[-1]
    _flip(seg, 3)
    damaged_head = seg.read_bytes()[:len(FORMAT_LINE)]
    with caplog.at_level("WARNING", logger="seclake.wal"):
        wal = _open(tmp_path, segment_bytes=400)
    assert [r["n"] for _, _, r in wal.replay(0)] == list(range(12))
    [damage] = wal.damage
    assert (damage["kind"], damage["lost"], damage["start"], damage["end"]) == ("damaged", None, 0, len(FORMAT_LINE))
    [copy] = _quarantined(tmp_path)
    assert copy.name == f"{seg.name}.damaged-0" and copy.read_bytes() == damaged_head
    assert (f"damaged format line at offset 0 in segment {seg.name} (acknowledged data): {len(FORMAT_LINE)} bytes "
            f"quarantined to {copy.name}, no record lost") in caplog.text
    # Appends go on, and the next start reads the same.
    assert wal.append([("event", {"n": 12})]) == (13, 13)
    wal.close()
    assert [r["n"] for _, _, r in _open(tmp_path).replay(0)] == list(range(13))


def test_a_damaged_last_entry_of_an_acknowledged_append_is_damage_not_a_torn_tail(tmp_path, caplog):
    """The append was fsynced and answered: a bad CRC on an entry whole in
    length is damage to acknowledged data, never "a torn tail, nothing acknowledged"."""
    wal = _open(tmp_path)
    for i in range(5):
        wal.append([("event", {"n": i})])
    wal.close()
    [seg] = _segments(tmp_path)
    last = _offsets(seg)[-1]
    size = seg.stat().st_size
    _flip(seg, last + 20)  # inside the payload
    entry = seg.read_bytes()[last:]
    with caplog.at_level("WARNING", logger="seclake.wal"):
        wal = _open(tmp_path)
    assert [r["n"] for _, _, r in wal.replay(0)] == [0, 1, 2, 3]
    [damage] = wal.damage
    assert (damage["kind"], damage["lost"]) == ("damaged", (5, 5))
    assert "torn" not in caplog.text and "nothing acknowledged" not in caplog.text
    assert (f"damaged entry at offset {last} in segment {seg.name} (acknowledged data): {size - last} bytes "
            f"quarantined to {seg.name}.damaged-{last}, records between seq 5 and 5 lost") in caplog.text
    assert (tmp_path / f"{seg.name}.damaged-{last}").read_bytes() == entry
    # Its sequence is never given to another record.
    assert wal.append([("event", {"n": 99})]) == (6, 6)
    wal.close()
    wal = _open(tmp_path)
    assert [(s, r["n"]) for s, _, r in wal.replay(0)] == [(1, 0), (2, 1), (3, 2), (4, 3), (6, 99)]
    assert [(d["kind"], d["lost"]) for d in wal.damage] == [("damaged", (5, 5))]


@pytest.mark.parametrize("cut", [7, "zeros"])
def test_a_torn_write_is_told_apart_cut_and_its_bytes_kept(tmp_path, caplog, cut):
    wal = _open(tmp_path)
    for i in range(5):
        wal.append([("event", {"n": i})])
    wal.close()
    [seg] = _segments(tmp_path)
    last = _offsets(seg)[-1]
    data = seg.read_bytes()
    torn = data[:-7] if cut == 7 else data[:last] + b"\0" * (len(data) - last)  # a crash mid-write
    seg.write_bytes(torn)
    with caplog.at_level("WARNING", logger="seclake.wal"):
        wal = _open(tmp_path)
    assert [r["n"] for _, _, r in wal.replay(0)] == [0, 1, 2, 3]
    [damage] = wal.damage
    assert (damage["kind"], damage["lost"]) == ("torn", None)
    assert (f"torn tail of {len(torn) - last} bytes at offset {last} in segment {seg.name}: never acknowledged, cut"
            in caplog.text)
    assert seg.stat().st_size == last
    assert (tmp_path / f"{seg.name}.torn-{last}").read_bytes() == torn[last:]
    assert wal.append([("event", {"n": 4})]) == (5, 5)  # never acknowledged: its sequence is free


def test_damage_in_the_middle_is_quarantined_and_names_the_records_lost(tmp_path, caplog):
    wal = _open(tmp_path)
    for b in range(3):
        wal.append([("event", {"batch": b, "n": i}) for i in range(10)])
    wal.close()
    [seg] = _segments(tmp_path)
    offsets = _offsets(seg)
    _flip(seg, offsets[14] + 25)
    with caplog.at_level("WARNING", logger="seclake.wal"):
        wal = _open(tmp_path)
    assert [s for s, _, _ in wal.replay(0)] == [s for s in range(1, 31) if s != 15]
    [damage] = wal.damage
    assert (damage["kind"], damage["lost"]) == ("damaged", (15, 15))
    n = offsets[15] - offsets[14]
    assert (f"damaged entry at offset {offsets[14]} in segment {seg.name} (acknowledged data): {n} bytes "
            f"quarantined to {seg.name}.damaged-{offsets[14]}, records between seq 15 and 15 lost") in caplog.text
    assert len((tmp_path / f"{seg.name}.damaged-{offsets[14]}").read_bytes()) == n


def test_damage_to_acknowledged_data_is_kept_until_acknowledged_and_torn_tails_are_not(tmp_path):
    from seclake.storage.damage import DamageLedger  # noqa: PLC0415

    wal = _open(tmp_path, segment_bytes=300)
    for i in range(8):
        wal.append([("event", {"n": i, "pad": "y" * 30})])
    wal.close()
    first, *_, live = _segments(tmp_path)
    _flip(first, 5)
    live.write_bytes(live.read_bytes()[:-3])
    _open(tmp_path, segment_bytes=300).close()
    ledger = DamageLedger(tmp_path)
    [open_damage] = ledger.unacknowledged()
    assert open_damage["segment"] == first.name and "damaged format line" in open_damage["message"]
    # Found again at the next start: still one entry, not two.
    _open(tmp_path, segment_bytes=300).close()
    assert len(ledger.unacknowledged()) == 1
    assert [d["id"] for d in ledger.acknowledge()] == [open_damage["id"]]
    assert ledger.unacknowledged() == []
    _open(tmp_path, segment_bytes=300).close()
    assert ledger.unacknowledged() == [] and len(ledger.entries()) == 1


def test_a_damaged_tail_whose_headers_name_nothing_still_never_gives_its_sequence_again(tmp_path, caplog):
    wal = _open(tmp_path)
    for i in range(3):
        wal.append([("event", {"n": i})])
    wal.close()
    [seg] = _segments(tmp_path)
    last = _offsets(seg)[-1]
    for at in range(last, last + 16):  # the whole header of the last entry
        _flip(seg, at)
    with caplog.at_level("ERROR", logger="seclake.wal"):
        wal = _open(tmp_path)
    assert [r["n"] for _, _, r in wal.replay(0)] == [0, 1]
    assert [(d["kind"], d["lost"]) for d in wal.damage] == [("damaged", (3, None))]
    assert "records from seq 3 on lost (how many is not known" in caplog.text
    assert wal.append([("event", {"n": 9})]) == (4, 4)
