"""The split store and the lake's use of it, against a local S3 stand-in.

There is no real S3 here: every test talks to moto's S3 server on
127.0.0.1 (``tests/storage/s3server.py``), which speaks the S3 HTTP
protocol. What is checked: a split is uploaded whole before the catalog
publishes it; a failed upload publishes nothing and keeps the records to
retry; retired splits leave the bucket only after their grace period.
"""

from __future__ import annotations

import pytest

from seclake.settings import load_settings
from seclake.storage.catalog import MARKED, PUBLISHED, STAGED
from seclake.storage.lake import Lake
from seclake.storage.merge import DAY_MS
from seclake.storage.split import META_FILE
from seclake.storage.splitstore import PARTIAL_PREFIX, SplitStore, SplitStoreError, StoreConfig
from tests.storage.s3server import s3_stand_in

DAY0 = 1_763_683_200_000  # 2025-11-21T00:00:00Z


@pytest.fixture(scope="module")
def s3():
    with s3_stand_in() as server:
        yield server


@pytest.fixture
def store(s3):
    return SplitStore(s3.config(s3.bucket()), max_retries=0)


@pytest.fixture
def open_lake(tmp_path, db):
    opened = []

    def open_(store):
        lake = Lake(tmp_path / "data", db, commit_interval=0.05, store=store)
        lake.start(background=False)
        opened.append(lake)
        return lake

    yield open_
    for lake in opened:
        try:
            lake.stop()
        except Exception:
            pass


def _event(i: int, day: int = 0) -> dict:
    return {"@timestamp": DAY0 + day * DAY_MS + i, "@message": f"event {i}", "@fields": {"n": i}}


def _stored(store: SplitStore) -> dict[str, dict[str, int]]:
    """split id -> its files in the bucket."""
    import obstore

    out: dict[str, dict[str, int]] = {}
    for batch in obstore.list(store.store):
        for o in batch:
            _dataset, split_id, name = o["path"].split("/")
            out.setdefault(split_id, {})[name] = o["size"]
    return out


class FailingStore(SplitStore):
    """The real store, whose uploads fail after ``ok`` files (a network cut mid-split)."""

    def __init__(self, config, ok: int):
        super().__init__(config, max_retries=0)
        self.ok = ok

    def upload(self, dataset, split_id, local):
        import obstore

        real = obstore.put

        def put(store, key, *args, **kwargs):
            if self.ok <= 0:
                raise ConnectionError("connection reset by peer (injected)")
            self.ok -= 1
            return real(store, key, *args, **kwargs)

        obstore.put = put
        try:
            return super().upload(dataset, split_id, local)
        finally:
            obstore.put = real


def test_bad_store_settings_are_refused_with_what_is_expected():
    with pytest.raises(ValueError, match="s3://bucket/prefix"):
        load_settings(split_store_url="/shared/splits")
    with pytest.raises(ValueError, match="split_store_endpoint"):
        load_settings(split_store_url="s3://b/p", split_store_endpoint="minio:9000")
    assert StoreConfig.from_settings(load_settings()) is None
    config = StoreConfig(url="s3://b/p", secret_access_key="very-secret")
    assert "very-secret" not in repr(config)


def test_a_published_split_is_in_the_bucket_whole(open_lake, store, tmp_path):
    lake = open_lake(store)
    lake.append([("event", _event(i, day=i % 2)) for i in range(20)])
    lake.flush()
    published = lake.catalog.entries(PUBLISHED)
    assert len(published) == 2 and not lake.catalog.entries(STAGED)
    stored = _stored(store)
    assert set(stored) == {e.split_id for e in published}
    for e in published:
        local = lake.layout.split_dir(e.dataset, e.split_id)
        assert stored[e.split_id] == {p.name: p.stat().st_size for p in local.iterdir() if p.is_file() and not p.name.endswith(".lock")}
        assert META_FILE in stored[e.split_id]
    # A copy downloaded from the bucket is the same split.
    e = published[0]
    dest = tmp_path / "copy" / e.dataset / e.split_id
    assert store.download(e.dataset, e.split_id, dest) == sum(stored[e.split_id].values())
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(PARTIAL_PREFIX)]
    from seclake.storage.split import Split

    assert [r.docid for r in Split(dest).all_records()] == [
        r.docid for r in Split(lake.layout.split_dir(e.dataset, e.split_id)).all_records()
    ]


def test_a_failed_upload_publishes_nothing_and_the_records_are_retried(open_lake, s3, db):
    config = s3.config(s3.bucket())
    failing = FailingStore(config, ok=2)
    lake = open_lake(failing)
    first, last = lake.append([("event", _event(i)) for i in range(10)])
    with pytest.raises(SplitStoreError, match="could not upload split event/.*injected"):
        lake.flush()
    # Nothing visible: no published or staged row, no object, no local split, checkpoint unmoved.
    assert lake.catalog.entries(PUBLISHED) == [] and lake.catalog.entries(STAGED) == []
    assert _stored(failing) == {}
    assert not any(lake.layout.splits.rglob(META_FILE))
    assert lake.catalog.checkpoint() == 0
    assert lake.stats()["pending"] == 10
    # The records are still in the log: after a crash now, a restart replays them...
    lake.abandon()
    lake2 = open_lake(SplitStore(config, max_retries=0))
    lake2.flush()
    (entry,) = lake2.catalog.entries(PUBLISHED)
    assert (entry.num_records, lake2.catalog.checkpoint()) == (10, last)
    assert set(_stored(lake2.store)) == {entry.split_id}


def test_the_next_flush_retries_a_failed_upload(open_lake, s3):
    failing = FailingStore(s3.config(s3.bucket()), ok=0)
    lake = open_lake(failing)
    lake.append([("event", _event(i)) for i in range(5)])
    with pytest.raises(SplitStoreError):
        lake.flush()
    failing.ok = 1000  # the network is back
    assert lake.flush() == 5
    (entry,) = lake.catalog.entries(PUBLISHED)
    assert set(_stored(failing)) == {entry.split_id}
    assert sorted(r.docid for s in lake.splits("event") for r in s.all_records()) == [1, 2, 3, 4, 5]


def test_a_crash_mid_upload_is_cleaned_up_at_start(open_lake, store, db):
    lake = open_lake(store)
    lake.append([("event", _event(i)) for i in range(5)])
    lake.flush()
    (kept,) = lake.catalog.entries(PUBLISHED)
    # What a crash between staging and publishing leaves: a staged row, some objects.
    from seclake.storage.split import Split

    meta = Split(lake.layout.split_dir(kept.dataset, kept.split_id)).meta
    meta.split_id = "event-20251121-deadbeef0000"
    lake.catalog.stage([meta])
    import obstore

    obstore.put(store.store, f"event/{meta.split_id}/some.idx", b"half")
    lake.abandon()
    lake2 = open_lake(store)
    assert lake2.catalog.entries(STAGED) == []
    assert [e.split_id for e in lake2.catalog.entries(PUBLISHED)] == [kept.split_id]
    assert set(_stored(store)) == {kept.split_id}


def test_retired_splits_leave_the_bucket_only_after_the_grace(open_lake, store):
    lake = open_lake(store)
    lake.janitor.retire_grace = 60.0
    lake.append([("event", _event(i, day=0)) for i in range(3)])
    lake.flush()
    (old,) = lake.catalog.entries(PUBLISHED)
    now_ms = DAY0 + 10 * DAY_MS
    assert lake.retention(5, now_ms=now_ms) == 1
    # Marked in the catalog (no search lists it), but still in the bucket for searches under way.
    assert lake.catalog.entries(PUBLISHED) == [] and [e.split_id for e in lake.catalog.entries(MARKED)] == [old.split_id]
    assert set(_stored(store)) == {old.split_id}
    import time

    assert lake.reap(now=time.monotonic() + 61) == 1
    assert _stored(store) == {} and lake.catalog.entries(MARKED) == []


def test_a_merge_uploads_the_merged_split_before_publishing_it(open_lake, store):
    lake = open_lake(store)
    lake.janitor.retire_grace = 0.0
    for i in range(8):
        lake.append([("event", _event(i))])
        lake.flush()
    assert lake.merge() == 1
    (merged,) = lake.catalog.entries(PUBLISHED)
    assert merged.num_records == 8
    lake.reap()
    assert set(_stored(store)) == {merged.split_id}


def test_a_lost_local_copy_is_fetched_from_the_store_at_start(open_lake, store):
    import shutil

    lake = open_lake(store)
    lake.append([("event", _event(i)) for i in range(4)])
    lake.flush()
    lake.stop()
    shutil.rmtree(lake.layout.splits)  # a new disk on the ingest node
    lake2 = open_lake(store)
    assert sorted(r.docid for s in lake2.splits("event") for r in s.all_records()) == [1, 2, 3, 4]


def test_a_stored_file_changed_by_one_byte_is_refused_not_searched(open_lake, store, tmp_path):
    import obstore

    lake = open_lake(store)
    lake.append([("event", _event(i)) for i in range(20)])
    lake.flush()
    (e,) = lake.catalog.entries(PUBLISHED)
    files = _stored(store)[e.split_id]
    # The largest index file, same size, one byte different: only the digest can tell.
    name = max((n for n in files if n != META_FILE), key=lambda n: files[n])
    key = f"event/{e.split_id}/{name}"
    data = bytearray(obstore.get(store.store, key).bytes())
    data[len(data) // 2] ^= 0x01
    obstore.put(store.store, key, bytes(data))
    dest = tmp_path / "copy" / e.dataset / e.split_id
    with pytest.raises(SplitStoreError, match=f"{name}: its content is not what split.json records"):
        store.download(e.dataset, e.split_id, dest)
    assert not dest.exists() and list(dest.parent.iterdir()) == []
    # A file split.json names that is gone from the bucket is refused too.
    obstore.delete(store.store, key)
    with pytest.raises(SplitStoreError, match=f"files \\['{name}'\\] differ from those split.json names"):
        store.download(e.dataset, e.split_id, dest)
    assert not dest.exists()
