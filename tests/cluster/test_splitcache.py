"""A searcher's split cache: open splits, and local copies of stored splits under a byte budget.

The stored splits live in a local S3 stand-in (moto's S3 server on
127.0.0.1, ``tests/storage/s3server.py``; no real S3 is reachable here),
written there by the lake as the ingest node does.
"""

from __future__ import annotations

import pytest

from seclake.cluster.splitcache import SplitCache
from seclake.db.database import Database
from seclake.storage.catalog import PUBLISHED
from seclake.storage.lake import Lake
from seclake.storage.merge import DAY_MS
from seclake.storage.split import META_FILE
from seclake.storage.splitstore import PARTIAL_PREFIX, SplitStore, SplitStoreError
from tests.storage.s3server import s3_stand_in

DAY0 = 1_763_683_200_000


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Four event splits (one per day) in a bucket; yields (store, [(dataset, id, bytes, docids)])."""
    base = tmp_path_factory.mktemp("stored")
    with s3_stand_in() as s3:
        store = SplitStore(s3.config(s3.bucket()), max_retries=0)
        db = Database(f"sqlite:///{base / 'meta.db'}")
        db.migrate()
        lake = Lake(base / "data", db, store=store)
        lake.start(background=False)
        for day in range(4):
            lake.append([("event", {"@timestamp": DAY0 + day * DAY_MS + i, "@message": f"d{day} r{i}"}) for i in range(5)])
        lake.flush()
        splits = [
            (e.dataset, e.split_id, sum(store.files(e.dataset, e.split_id).values()), day)
            for day, e in enumerate(lake.catalog.entries(PUBLISHED))
        ]
        lake.stop()
        db.dispose()
        yield store, splits


def _cache(store, tmp_path, max_bytes=10**9, max_open=100):
    return SplitCache(tmp_path / "no-shared-fs", max_open, store=store, cache_dir=tmp_path / "cache", max_bytes=max_bytes)


def _messages(split):
    return sorted(r.source["@message"] for r in split.all_records())


def test_a_split_is_downloaded_once_then_served_from_its_local_copy(stored, tmp_path):
    store, splits = stored
    cache = _cache(store, tmp_path)
    dataset, split_id, size, day = splits[0]
    assert _messages(cache.get(dataset, split_id)) == sorted(f"d{day} r{i}" for i in range(5))
    assert (tmp_path / "cache" / dataset / split_id / META_FILE).is_file()
    cache.get(dataset, split_id)
    assert (cache.downloaded, cache.opened, cache.cached_bytes) == (1, 1, size)
    # A split closed for the open-split bound is opened again from disk, not downloaded.
    small = _cache(store, tmp_path / "b", max_open=1)
    small.get(dataset, split_id)
    small.get(splits[1][0], splits[1][1])
    small.get(dataset, split_id)
    assert (small.downloaded, small.opened) == (2, 3)


def test_the_byte_budget_removes_the_least_recently_used_copy(stored, tmp_path):
    store, splits = stored
    (da, a, sa, _), (db_, b, sb, _), (dc, c, sc, _) = splits[:3]
    cache = _cache(store, tmp_path, max_bytes=sa + sb + min(sa, sb, sc) // 2)
    cache.get(da, a)
    cache.get(db_, b)
    cache.get(da, a)  # a is now more recent than b
    cache.get(dc, c)
    assert cache.copies() == [a, c]
    assert cache.evicted == 1 and cache.cached_bytes <= cache.max_bytes
    assert not (tmp_path / "cache" / db_ / b).exists()
    # b again: downloaded again, and now a is the oldest.
    assert _messages(cache.get(db_, b)) == sorted(f"d1 r{i}" for i in range(5))
    assert cache.copies() == [c, b] and cache.downloaded == 4
    leftovers = [p for p in (tmp_path / "cache" / "event").iterdir() if p.name.startswith(PARTIAL_PREFIX)]
    assert leftovers == []


def test_a_split_in_use_by_a_running_search_is_never_removed(stored, tmp_path):
    store, splits = stored
    (da, a, sa, _), (db_, b, sb, _), (dc, c, sc, _) = splits[:3]
    cache = _cache(store, tmp_path, max_bytes=max(sa, sb, sc))  # room for one split, not two
    with cache.use(da, a) as split:
        cache.get(db_, b)
        cache.get(dc, c)
        # b and c were each removed once opened (no room beside a); a, in use, stayed.
        assert cache.copies() == [a] and (tmp_path / "cache" / da / a).is_dir()
        assert cache.evicted == 2 and len(_messages(split)) == 5
    assert cache.copies() == [a]
    # Released: the next download removes it (least recently used).
    cache.get(db_, b)
    assert cache.copies() == [b] and cache.cached_bytes <= cache.max_bytes
    assert not (tmp_path / "cache" / da / a).exists()


def test_a_crash_mid_download_leaves_nothing_half_visible(stored, tmp_path, monkeypatch):
    store, splits = stored
    dataset, split_id, _, _ = splits[2]
    import obstore

    real, calls = obstore.get, []

    def get(s, key, *args, **kwargs):
        calls.append(key)
        if len(calls) == 2:
            raise ConnectionError("connection reset by peer (injected)")
        return real(s, key, *args, **kwargs)

    monkeypatch.setattr(obstore, "get", get)
    cache = _cache(store, tmp_path)
    with pytest.raises(SplitStoreError, match=f"could not download split {dataset}/{split_id}.*injected"):
        cache.get(dataset, split_id)
    assert list((tmp_path / "cache" / dataset).iterdir()) == []
    assert cache.copies() == [] and cache.cached_bytes == 0
    monkeypatch.setattr(obstore, "get", real)
    assert len(_messages(cache.get(dataset, split_id))) == 5


def test_copies_survive_a_restart_and_half_downloads_are_removed(stored, tmp_path):
    store, splits = stored
    (da, a, sa, _), (db_, b, sb, _) = splits[:2]
    first = _cache(store, tmp_path)
    first.get(da, a)
    first.get(db_, b)
    # What a process killed mid-download leaves: a partial directory.
    partial = tmp_path / "cache" / da / f"{PARTIAL_PREFIX}{splits[3][1]}-0000"
    partial.mkdir()
    (partial / "x.idx").write_bytes(b"half")
    again = _cache(store, tmp_path)
    assert not partial.exists()
    assert sorted(again.copies()) == sorted([a, b]) and again.cached_bytes == sa + sb
    again.get(da, a)
    assert again.downloaded == 0
    # A smaller budget at restart trims the copies found.
    trimmed = _cache(store, tmp_path, max_bytes=max(sa, sb))
    assert len(trimmed.copies()) == 1


def test_bad_references_and_missing_splits_say_what_is_wrong(stored, tmp_path):
    store, _ = stored
    cache = _cache(store, tmp_path)
    with pytest.raises(ValueError, match="bad split reference"):
        cache.get("event", "../etc")
    with pytest.raises(ValueError, match="bad split reference: split id 'event-nope' is not of the form"):
        cache.get("event", "event-nope")
    with pytest.raises(SplitStoreError, match="split event/event-20251121-000000000000 is not in s3://"):
        cache.get("event", "event-20251121-000000000000")
    with pytest.raises(ValueError, match="needs a cache directory"):
        SplitCache(tmp_path, store=store)


def test_a_link_in_the_cache_directory_never_has_the_start_s_sweep_delete_where_it_leads(stored, tmp_path):
    """The sweep at start removes half downloads; through a linked dataset directory it would
    have removed the victim's directories (issue 39)."""
    store, _ = stored
    victim = tmp_path / "victim"
    (victim / "photos").mkdir(parents=True)
    (victim / "photos" / "precious.txt").write_text("not seclake's")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "flow").symlink_to(victim, target_is_directory=True)
    (tmp_path / "cache" / "event").mkdir()
    (tmp_path / "cache" / "event" / "out").symlink_to(victim, target_is_directory=True)
    cache = _cache(store, tmp_path)
    assert (victim / "photos" / "precious.txt").exists()
    assert cache.copies() == []


def test_warming_downloads_in_the_order_given_and_never_pushes_out_a_copy(stored, tmp_path):
    store, splits = stored
    (da, a, sa, _), (db_, b, sb, _), (dc, c, sc, _), (dd, d, sd, _) = splits
    cache = _cache(store, tmp_path, max_bytes=sa + sc + sd)
    cache.get(da, a)  # a copy a search used
    # Newest first, as the warmer sends them; a missing split is skipped.
    warmed = cache.warm([(dd, d, sd), ("event", "event-gone", 1), (dc, c, sc), (db_, b, sb)])
    # d and c fit beside a; b would not: warming stops there instead of removing a.
    assert warmed == 2 and cache.evicted == 0
    assert sorted(cache.copies()) == sorted([a, c, d]) and cache.cached_bytes <= cache.max_bytes
    # Warm splits are open: a search opens nothing and downloads nothing more.
    before = (cache.opened, cache.downloaded)
    assert cache.get(dd, d).is_open and cache.get(dc, c).is_open  # their indexes too, not only split.json
    assert (cache.opened, cache.downloaded) == before
    # Sizes understated (the catalog's leave out the metadata file): the copy that
    # does not fit is the one dropped, never an older one.
    tight = _cache(store, tmp_path / "t", max_bytes=sa + sb - 1)
    tight.get(da, a)
    assert tight.warm([(db_, b, 0)]) == 0
    assert tight.copies() == [a] and not (tmp_path / "t" / "cache" / db_ / b).exists()
