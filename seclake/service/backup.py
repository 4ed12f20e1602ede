"""A copy of a deployment (database and lake), taken while it runs.

The copy is a data dir: ``seclake serve --data-dir <copy>`` opens it and
answers as the deployment would have after a crash at the moment the copy
ended, which seclake recovers from like any crash (docs/operations.md):

1. the write-ahead log is copied first: every record not yet in a split is
   in it, from the oldest the log still holds;
2. the database is copied with SQLite's online backup (a consistent
   snapshot of users, rules, detector state and the split catalog);
3. the log is copied again, over the first copy: records acknowledged
   while the database was copied, and anything the detector state in the
   snapshot refers to, are in the copy too; segments the server trimmed in
   between stay as first copied;
4. the splits the snapshot's catalog lists are hard-linked (splits are
   immutable) or copied when the copy is on another filesystem.

A catalog naming a split seclake never writes (``../../victim``), or a split
directory or file that is a symbolic link leading out of the lake, refuses
the backup: the copy would carry it, or read outside the data dir (issue 39).

Only SQLite deployments with splits on the local filesystem are copied
here: PostgreSQL and object storage have backups of their own
(docs/operations.md says how to combine them).
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from seclake.db.database import Database
from seclake.settings import Settings
from seclake.storage import columns
from seclake.storage.catalog import PUBLISHED, Catalog, CatalogRefused
from seclake.storage.layout import Layout
from seclake.storage.pathname import UnsafeName

log = logging.getLogger("seclake.backup")


class BackupRefused(RuntimeError):
    """The deployment cannot be copied by this command (and why)."""


def backup(settings: Settings, dest: Path) -> dict[str, Any]:
    url = make_url(settings.effective_database_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        raise BackupRefused("the database is not SQLite: back it up with its own tools (pg_dump), "
                            "see docs/operations.md")
    if settings.split_store_url:
        raise BackupRefused("splits are on object storage (split_store_url): back up the bucket with its own tools, "
                            "see docs/operations.md")
    if dest.exists() and any(dest.iterdir()):
        raise BackupRefused(f"{dest} exists and is not empty: a backup goes to a new directory")
    source = Layout(settings.data_dir)
    if not source.format_file.exists():
        raise BackupRefused(f"{settings.data_dir} holds no lake (no {source.format_file.name})")
    target = Layout(dest)
    target.wal.mkdir(parents=True)
    target.splits.mkdir()
    shutil.copy2(source.format_file, target.format_file)

    first = _copy_log(source.wal, target.wal)
    db_file = dest / "seclake.db"
    with sqlite3.connect(url.database) as live, sqlite3.connect(db_file) as copy:
        live.backup(copy)
    second = _copy_log(source.wal, target.wal)

    db = Database(f"sqlite:///{db_file}")
    try:
        catalog = Catalog(db)
        catalog.check()
        entries = catalog.entries(PUBLISHED)
    except CatalogRefused as e:
        raise BackupRefused(f"{e}; nothing usable was written: remove the copy {dest}") from None
    finally:
        db.dispose()
    linked = copied = size = 0
    for e in entries:
        try:
            src, dst = source.split_dir(e.dataset, e.split_id), target.split_dir(e.dataset, e.split_id)
        except UnsafeName as bad:
            raise BackupRefused(f"{bad}; nothing usable was written: remove the copy {dest}") from None
        if not src.is_dir():
            raise BackupRefused(f"split {e.dataset}/{e.split_id} of the catalog is missing from {source.splits}; "
                                "nothing usable was written: remove the copy and run the backup again")
        dst.parent.mkdir(parents=True, exist_ok=True)
        for path in sorted(src.iterdir()):
            if path.name == columns.DIRECTORY and path.is_dir() and not path.is_symlink():
                continue  # the columns analytics computed (storage/columns.py): computed again when read
            if path.is_symlink() or not path.is_file():
                # A split is plain files; a link would copy what it leads to.
                raise BackupRefused(f"{path} is not a plain file of split {e.split_id} (a link or a directory, "
                                    f"which could lead outside {source.splits}); nothing usable was written: "
                                    f"remove the copy {dest}")
            dst.mkdir(exist_ok=True)
            try:
                os.link(path, dst / path.name)
                linked += 1
            except OSError:  # another filesystem: copy
                shutil.copy2(path, dst / path.name)
                copied += 1
            size += path.stat().st_size
    report = {
        "splits": len(entries), "split_bytes": size, "files_linked": linked, "files_copied": copied,
        "log_segments": len({*first, *second}), "database_bytes": db_file.stat().st_size,
    }
    log.info("backup of %s to %s: %s", settings.data_dir, dest, report)
    return report


def _copy_log(source: Path, target: Path) -> list[str]:
    """Copy every log segment there is now (a live one as far as written)."""
    done = []
    for path in sorted(source.iterdir()):
        try:
            shutil.copyfile(path, target / path.name)
        except FileNotFoundError:  # trimmed meanwhile: its records are in splits
            continue
        done.append(path.name)
    return done
