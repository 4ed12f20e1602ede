"""Idempotency keys: a keyed import is stored at most once, across retries, crashes and restarts.

The lake, the log and the keys are real (SQLite and PostgreSQL); a crash is
``Lake.abandon`` (what a killed process leaves: the log as fsynced, nothing
indexed, nothing recorded after it). The HTTP header and a real killed
server are tested in tests/api.
"""

from __future__ import annotations

import gzip
import io
import threading

import pytest

from seclake.db.database import Database
from seclake.errors import Conflict, Unprocessable, ValidationFailed
from seclake.service import ingestion as ingestion_module
from seclake.service.idempotency import LOCAL, Idempotency, IdempotencyKey, parse_key
from seclake.service.ingestion import Ingestion, Replayed
from seclake.storage.lake import Lake

BODY = b'{"@timestamp": 1763683200000, "n": 1}\n{"@timestamp": 1763683200001, "n": 2}\nnot json at all\n'
ALICE = ("user:1:0", "import-1")
HOUR_MS = 3_600_000


class Rig:
    """A lake with its ingestion and keys, as one writer process has them."""

    def __init__(self, data_dir, db: Database, now: list[int], **lake_kw):
        self.lake = Lake(data_dir, db, **lake_kw)
        self.keys = Idempotency(db, self.lake, window_hours=24, clock=lambda: now[0])
        self.ingestion = Ingestion(self.lake, idempotency=self.keys)
        self.lake.start(background=False)
        self.keys.start()

    def load(self, body: bytes = BODY, key=ALICE, **kw):
        return self.ingestion.import_body(body, vendor="test", max_bytes=1 << 20, key=key, **kw)

    def stored(self) -> list[int]:
        self.lake.flush()
        # The n of each stored record; 0 for the line kept raw.
        return sorted(r.source["@fields"].get("n", 0) for s in self.lake.splits("event") for r in s.all_records())

    def stop(self) -> None:
        self.keys.stop()
        self.lake.stop()

    def crash(self) -> None:
        self.lake.abandon()


@pytest.fixture
def db(database_url):
    database = Database(database_url)
    database.migrate()
    yield database
    database.dispose()


@pytest.fixture
def now():
    return [1_763_683_200_000]


@pytest.fixture
def rig(tmp_path, db, now):
    r = Rig(tmp_path, db, now)
    yield r
    r.stop()


def test_a_retry_gets_the_first_reply_and_stores_nothing(rig):
    first = rig.load()
    assert not isinstance(first, Replayed)
    assert (first["accepted"], first["raw"], first["stored"]) == (2, 1, 3)
    again = rig.load()
    assert isinstance(again, Replayed) and again == first
    # Sent compressed this time: the same lines, the same import.
    assert rig.load(gzip.compress(BODY)) == first
    assert rig.stored() == [0, 1, 2]


def test_the_same_key_for_another_import_is_refused_and_stores_nothing(rig):
    rig.load()
    with pytest.raises(Unprocessable, match="Idempotency-Key 'import-1' was used for a different import"):
        rig.load(BODY.replace(b'"n": 2', b'"n": 3'))
    with pytest.raises(Unprocessable):
        rig.load(customer="other")  # a parameter that changes the outcome
    assert rig.stored() == [0, 1, 2]


def test_keys_are_scoped_to_their_caller(rig):
    rig.load()
    bob = rig.load(key=("user:2:0", ALICE[1]))
    assert not isinstance(bob, Replayed)  # bob's "import-1" is his own
    assert rig.stored() == [0, 0, 1, 1, 2, 2]


def test_a_key_in_flight_is_refused_and_the_retry_stores_nothing(rig):
    seen: list[Exception] = []
    real_append = rig.ingestion._append

    def append_while_retried(items, key=None, prepared=None):
        try:
            rig.load()  # the retry arrives while the first is being stored
        except Conflict as e:
            seen.append(e)
        return real_append(items, key=key, prepared=prepared)

    rig.ingestion._append = append_while_retried
    rig.load()
    assert "still being stored" in str(seen[0])
    rig.ingestion._append = real_append
    assert isinstance(rig.load(), Replayed)
    assert rig.stored() == [0, 1, 2]


def test_a_failed_append_leaves_the_key_unused(rig, monkeypatch):
    def broken(items, key=None, prepared=None):
        raise OSError("disk full")

    monkeypatch.setattr(rig.ingestion, "_append", broken)
    with pytest.raises(OSError):
        rig.load()
    monkeypatch.undo()
    assert not isinstance(rig.load(), Replayed)
    assert rig.stored() == [0, 1, 2]


def test_a_crash_after_the_log_append_is_a_replay_after_restart(tmp_path, db, now, monkeypatch):
    rig = Rig(tmp_path, db, now)
    # The process dies right after the fsync: no row is ever written.
    monkeypatch.setattr(Idempotency, "record", lambda self: 0)
    first = rig.load()
    rig.crash()
    monkeypatch.undo()
    with db.session() as s:
        assert s.query(IdempotencyKey).count() == 0
    rig = Rig(tmp_path, db, now)
    try:
        with db.session() as s:
            assert s.query(IdempotencyKey).count() == 1  # recorded from the log at start
        again = rig.load()
        assert isinstance(again, Replayed) and again == first
        assert rig.stored() == [0, 1, 2]
    finally:
        rig.stop()


def test_an_unrecorded_key_keeps_its_log_segment_past_indexing(tmp_path, db, now, monkeypatch):
    rig = Rig(tmp_path, db, now)
    rig.lake.wal.segment_bytes = 200  # a segment per batch: trimming could remove it
    refuse = monkeypatch.setattr
    refuse(Idempotency, "record", lambda self: 0)  # the database refuses the row
    first = rig.load()
    for n in range(3, 6):
        rig.load(b'{"@timestamp": 1763683200000, "n": %d, "pad": "%s"}\n' % (n, b"x" * 150), key=None)
    assert rig.stored() == [0, 1, 2, 3, 4, 5]  # indexed, checkpoint past the keyed batch
    assert rig.lake.wal.keys == [] and len(list(rig.lake.layout.wal.glob("*.wal"))) > 1
    rig.crash()
    monkeypatch.undo()
    rig = Rig(tmp_path, db, now)
    try:
        assert rig.load() == first
        assert rig.stored() == [0, 1, 2, 3, 4, 5]
    finally:
        rig.stop()


def test_a_recorded_key_lets_the_log_go_and_survives_restarts(tmp_path, db, now):
    rig = Rig(tmp_path, db, now)
    first = rig.load()
    rig.stored()
    rig.stop()
    rig = Rig(tmp_path, db, now)
    try:
        assert rig.keys.hold() > 10**12  # nothing held: the row has the key
        assert isinstance(rig.load(), Replayed) and rig.load() == first
        assert rig.stored() == [0, 1, 2]
    finally:
        rig.stop()


def test_keys_expire_after_the_window(rig, db, now):
    rig.load()
    now[0] += 23 * HOUR_MS
    assert rig.keys.expire() == 0 and isinstance(rig.load(), Replayed)
    now[0] += 2 * HOUR_MS
    # Past the window the key is new again, even before maintenance deletes the row...
    assert not isinstance(rig.load(), Replayed)
    assert rig.stored() == [0, 0, 1, 1, 2, 2]
    now[0] += 25 * HOUR_MS
    # ...and maintenance deletes expired rows.
    assert rig.keys.expire() == 1
    with db.session() as s:
        assert s.query(IdempotencyKey).count() == 0


def test_an_import_with_nothing_accepted_is_remembered_too(rig):
    first = rig.load(b"\n\n", key=("user:1:0", "empty"))
    assert first["stored"] == 0 and first["firstDocId"] is None
    assert isinstance(rig.load(b"\n\n", key=("user:1:0", "empty")), Replayed)


def test_a_file_import_with_a_run_key_stores_each_batch_once(rig, monkeypatch):
    monkeypatch.setattr(ingestion_module, "BATCH", 2)
    lines = b"".join(b'{"@timestamp": 1763683200000, "n": %d}\n' % n for n in range(7))
    calls = []

    def stream(fail_after=None):
        def progress(n):
            calls.append(n)
            if fail_after is not None and len(calls) == fail_after:
                raise KeyboardInterrupt  # the operator gives up mid-way (or the machine dies)

        return rig.ingestion.import_stream(
            io.BytesIO(lines), vendor="test", max_bytes=1 << 20, key=(LOCAL, "run.0"), progress=progress
        )

    with pytest.raises(KeyboardInterrupt):
        stream(fail_after=2)
    report = stream()
    assert report["accepted"] == 7 and report["replayed"] == 4  # the two batches stored before
    assert rig.stored() == list(range(7))
    assert stream()["replayed"] == 7


@pytest.mark.parametrize(
    "value, key",
    [("abc-123", "abc-123"), ('"8e03978e-40d5-43e8-bc93-6894a57f9324"', "8e03978e-40d5-43e8-bc93-6894a57f9324")],
)
def test_good_keys(value, key):
    assert parse_key([value]) == key


@pytest.mark.parametrize("values", [[""], ["has space"], ["x" * 256], ["é"], ["a", "b"], ['"']])
def test_bad_keys_name_the_header(values):
    with pytest.raises(ValidationFailed, match="^Idempotency-Key: "):
        parse_key(values)


def test_keys_of_different_imports_do_not_wait_for_each_other(rig):
    errors: list[Exception] = []

    def load(k: int) -> None:
        try:
            rig.load(b'{"@timestamp": 1763683200000, "n": %d}\n' % k, key=("user:1:0", f"k{k}"))
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=load, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and rig.stored() == list(range(8))
    assert rig.keys.hold() > 10**12  # nothing in flight, nothing unrecorded


def test_an_import_that_failed_after_its_fsync_is_a_replay_when_retried(rig, monkeypatch):
    def enqueue_fails(assigned):
        raise RuntimeError("what follows the fsync failed")

    monkeypatch.setattr(rig.lake.flusher, "enqueue", enqueue_fails)
    with pytest.raises(Exception, match="were logged"):
        rig.load()
    monkeypatch.undo()
    again = rig.load()
    assert isinstance(again, Replayed) and (again["firstDocId"], again["lastDocId"]) == (1, 3)
