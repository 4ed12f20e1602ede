"""Splits on S3-compatible object storage (setting ``split_store_url``).

Without a split store, splits live on a shared filesystem and every node
opens them in place. With one, the ingest node uploads every file of a split
under ``<prefix>/<dataset>/<split id>/`` before the catalog publishes it, and
searchers download a split into a local directory before opening it
(``cluster/splitcache.py``): tantivy opens directories, not objects.

The client is obstore (optional extra ``s3``); it is imported only when a
store is configured, so the shared-filesystem mode needs nothing more.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from seclake.storage.layout import check_split
from seclake.storage.pathname import entry, inside
from seclake.storage.split import META_FILE, SplitMeta, digest, index_files

log = logging.getLogger("seclake.splitstore")

# Files are streamed in chunks of this size (download) and uploaded in parts
# of this size past it (multipart), so memory stays bounded for any split.
CHUNK_BYTES = 8 * 1024 * 1024
# A temporary download directory starts with this, so a crash mid-download
# leaves something no reader takes for a split (and the next start removes).
PARTIAL_PREFIX = ".partial-"


def check_url(setting: str, url: str) -> str:
    """``url`` if it is a valid value of ``setting``; else a ValueError saying what is expected."""
    parsed = urlparse(url)
    if setting == "split_store_url":
        if parsed.scheme != "s3" or not parsed.netloc:
            raise ValueError(f"split_store_url {url!r} is not of the form s3://bucket/prefix")
    elif parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"{setting} {url!r} is not an http:// or https:// URL")
    return url


class SplitStoreError(RuntimeError):
    """The object store refused or failed an operation; what and where are in the message."""


@dataclass(frozen=True)
class StoreConfig:
    """Where the splits are and how to reach them: plain data, so it crosses to Ray actors.

    Credentials left empty are found by the client the usual AWS ways: the
    ``AWS_*`` variables of the process that builds the store (on a searcher,
    the environment of ``ray start`` on that node, or of ``seclake searcher``,
    which passes them on), then the instance's role.
    """

    url: str
    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None

    def __post_init__(self) -> None:
        check_url("split_store_url", self.url)
        if self.endpoint:
            check_url("split_store_endpoint", self.endpoint)

    @classmethod
    def from_settings(cls, settings: Any) -> StoreConfig | None:
        """The store the settings name, or None for the shared filesystem."""
        if not settings.split_store_url:
            return None
        secret = settings.split_store_secret_access_key
        return cls(
            url=settings.split_store_url,
            endpoint=settings.split_store_endpoint or os.environ.get("AWS_ENDPOINT_URL") or None,
            region=settings.split_store_region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
            access_key_id=settings.split_store_access_key_id or os.environ.get("AWS_ACCESS_KEY_ID"),
            secret_access_key=(secret.get_secret_value() if secret else None) or os.environ.get("AWS_SECRET_ACCESS_KEY"),
            session_token=os.environ.get("AWS_SESSION_TOKEN"),
        )

    def __repr__(self) -> str:  # never print the secret (logs, Ray's actor listings)
        return f"StoreConfig(url={self.url!r}, endpoint={self.endpoint!r}, region={self.region!r})"


class SplitStore:
    """A split's files under ``<prefix>/<dataset>/<split id>/`` of one bucket."""

    def __init__(self, config: StoreConfig, *, max_retries: int = 5):
        try:
            from obstore.store import S3Store
        except ImportError:
            raise SplitStoreError(
                'split_store_url is set but the object store client is missing: pip install "seclake[s3]"'
            ) from None
        self.config = config
        parsed = urlparse(config.url)
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        options: dict[str, Any] = {}
        for key in ("endpoint", "region", "access_key_id", "secret_access_key", "session_token"):
            value = getattr(config, key)
            if value:
                options[key] = value
        client = {"allow_http": True} if (config.endpoint or "").startswith("http://") else {}
        self.store = S3Store(
            self.bucket,
            prefix=self.prefix or None,
            client_options=client,
            retry_config={"max_retries": max_retries, "retry_timeout": timedelta(seconds=60)},
            **options,
        )

    def __repr__(self) -> str:
        return f"SplitStore({self.config.url})"

    @staticmethod
    def _key(dataset: str, split_id: str, name: str = "") -> str:
        # The catalog's names become keys: a ``..`` in one would reach another split's objects.
        check_split(dataset, split_id, "object key")
        return f"{dataset}/{split_id}/{entry(name, 'file name', 'object key') if name else ''}"

    def _fail(self, what: str, dataset: str, split_id: str, e: Exception) -> SplitStoreError:
        return SplitStoreError(f"{what} split {dataset}/{split_id} at {self.config.url}: {str(e).splitlines()[0]}")

    # -- the ingest node ------------------------------------------------

    def upload(self, dataset: str, split_id: str, local: Path) -> int:
        """Put every file of a local split; return the bytes sent.

        ``split.json`` goes last, so a listing that shows it shows a whole
        split; but readers learn of a split from the catalog, which the lake
        updates only after this returns. On failure what was sent is removed
        (best effort) and the error raised.
        """
        import obstore

        files = sorted(index_files(local), key=lambda p: (p.name == META_FILE, p.name))
        if not any(p.name == META_FILE for p in files):
            raise SplitStoreError(f"{local} is not a split (no {META_FILE})")
        sent = 0
        try:
            for p in files:
                obstore.put(self.store, self._key(dataset, split_id, p.name), p, chunk_size=CHUNK_BYTES)
                sent += p.stat().st_size
        except Exception as e:
            self.delete(dataset, split_id, quiet=True)
            raise self._fail("could not upload", dataset, split_id, e) from e
        return sent

    def delete(self, dataset: str, split_id: str, *, quiet: bool = False) -> int:
        """Remove every object of a split; return how many there were."""
        import obstore

        try:
            keys = [o["path"] for batch in obstore.list(self.store, self._key(dataset, split_id)) for o in batch]
            if keys:
                obstore.delete(self.store, keys)
            return len(keys)
        except Exception as e:
            if quiet:
                log.warning("could not delete split %s/%s from %s: %s", dataset, split_id, self.config.url, e)
                return 0
            raise self._fail("could not delete", dataset, split_id, e) from e

    # -- searchers ------------------------------------------------------

    def files(self, dataset: str, split_id: str) -> dict[str, int]:
        """File name -> size of a stored split; empty when there is none."""
        import obstore

        prefix = self._key(dataset, split_id)
        try:
            listed = [o for batch in obstore.list(self.store, prefix) for o in batch]
        except Exception as e:
            raise self._fail("could not list", dataset, split_id, e) from e
        # obstore answers paths relative to the store's prefix.
        out = {o["path"][len(prefix):]: int(o["size"]) for o in listed if o["path"].startswith(prefix)}
        return {name: size for name, size in out.items() if name and "/" not in name}

    def _fetch(self, dataset: str, split_id: str, name: str, size: int, directory: Path) -> str:
        """One file into ``directory``, fsynced, its size checked; its digest."""
        import obstore

        got = 0
        h = digest()
        # The name is the store's listing: a file of this directory, nothing else.
        with open(inside(directory, name, what="file name", where=f"split {dataset}/{split_id}"), "wb") as out:
            for chunk in obstore.get(self.store, self._key(dataset, split_id, name)).stream(CHUNK_BYTES):
                out.write(chunk)
                h.update(chunk)
                got += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        if got != size:
            raise SplitStoreError(f"{name}: {got} bytes read, {size} listed")
        return h.hexdigest()

    def download(self, dataset: str, split_id: str, dest: Path) -> int:
        """Copy a stored split to ``dest`` (which must not exist); return its bytes.

        The files go into a temporary sibling directory first, fsynced, then
        renamed to ``dest`` in one step: a crash mid-download leaves only a
        ``.partial-*`` directory, never a half split under the split's name.
        Every file is checked against the size listed and the digest
        ``split.json`` records (splits written before digests: size only), so
        a copy that differs by a byte is refused, never searched.
        """
        files = self.files(dataset, split_id)
        if META_FILE not in files:
            raise SplitStoreError(f"split {dataset}/{split_id} is not in {self.config.url}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.parent / f"{PARTIAL_PREFIX}{split_id}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            # split.json first: it names the digest of every other file.
            self._fetch(dataset, split_id, META_FILE, files[META_FILE], tmp)
            digests = SplitMeta.from_json(json.loads((tmp / META_FILE).read_text())).files
            for name in digests or ():
                entry(name, "file name", f"{META_FILE} of split {dataset}/{split_id}")
            if digests is not None and set(digests) != set(files) - {META_FILE}:
                missing = sorted(set(digests) - set(files))
                raise SplitStoreError(f"files {missing or sorted(set(files) - set(digests) - {META_FILE})} "
                                      f"differ from those {META_FILE} names")
            for name, size in files.items():
                if name != META_FILE:
                    got = self._fetch(dataset, split_id, name, size, tmp)
                    if digests is not None and got != digests[name]:
                        raise SplitStoreError(f"{name}: its content is not what {META_FILE} records (digest {got})")
            os.rename(tmp, dest)
        except Exception as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise self._fail("could not download", dataset, split_id, e) from e
        return sum(files.values())
