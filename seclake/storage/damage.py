"""The damage ledger: what the write-ahead log found damaged, kept until an operator acknowledges it.

The log (``storage/wal.py``) finds damage when it opens: a log message is
read once, if at all, so damage to acknowledged data (records the caller
was told are stored) is also written here, ``damage.json`` in the log's
directory, and named by ``/healthz``, ``/readyz`` and
``seclake_log_damage_unacknowledged`` until ``seclake lake
acknowledge-damage`` marks it seen (``seclake lake check`` lists it). A torn
tail (a write cut short by a crash, never acknowledged) is not kept: it is
what any crash under ingest leaves, and nothing the caller was told is in it.

The same damage is found again at every start while its segment is kept;
it is one entry (its segment and offset), so an acknowledged one stays
acknowledged. ``acknowledge`` may run while the server runs: the file is
replaced whole under a lock of its own, and readers look at it each time.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("seclake.wal")

FILE = "damage.json"
VERSION = 1


class DamageLedger:
    def __init__(self, directory: Path):
        self.path = directory / FILE
        self._lock_path = directory / (FILE + ".lock")
        self._cached: tuple[tuple[int, int], list[dict[str, Any]]] | None = None

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, acknowledged or not, oldest first (read again only when the file changed)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return []
        stamp = (st.st_mtime_ns, st.st_size)
        if self._cached is None or self._cached[0] != stamp:
            try:
                entries = self._read()
            except ValueError as e:
                # Readers (probes, metrics) name it as damage rather than fail.
                log.error("%s", e)
                entries = [{"id": FILE, "segment": None, "kind": "damaged", "lost": None, "acknowledged_at": None,
                            "message": str(e)}]
            self._cached = (stamp, entries)
        return self._cached[1]

    def unacknowledged(self) -> list[dict[str, Any]]:
        return [e for e in self.entries() if e.get("acknowledged_at") is None]

    def record(self, found: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Keep the damage to acknowledged data in ``found`` not kept yet; return the new entries."""
        with self._locked():
            try:
                entries = self._read()
            except ValueError as e:
                # A start never stops on it: the unreadable ledger is kept aside, a new one begun.
                aside = self.path.with_name(f"{FILE}.unreadable-{int(time.time())}")
                os.replace(self.path, aside)
                log.error("%s; moved to %s, a new ledger begun", e, aside.name)
                entries = []
            known = {e["id"] for e in entries}
            new = []
            for d in found:
                if d["kind"] == "torn":
                    continue
                entry = {"id": f"{d['segment']}@{d['start']}", **_plain(d), "found_at": _now(), "acknowledged_at": None}
                if entry["id"] not in known:
                    known.add(entry["id"])
                    new.append(entry)
            if new:
                self._write(entries + new)
            return new

    def acknowledge(self, ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Mark the entries ``ids`` (all when None) seen; return those that were not yet.

        An id that names no entry is an error, raised before anything changes.
        """
        wanted = None if ids is None else list(ids)
        with self._locked():
            entries = self._read()
            if wanted is not None:
                unknown = sorted(set(wanted) - {e["id"] for e in entries})
                if unknown:
                    raise KeyError(f"no log damage with the id {', '.join(unknown)} (seclake lake check lists them)")
            done = []
            for e in entries:
                if e["acknowledged_at"] is None and (wanted is None or e["id"] in wanted):
                    e["acknowledged_at"] = _now()
                    done.append(e)
            if done:
                self._write(entries)
            return done

    def _read(self) -> list[dict[str, Any]]:
        try:
            doc = orjson.loads(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except orjson.JSONDecodeError as e:
            raise ValueError(f"{self.path}: not a damage ledger ({e}); move it away to start a new one") from None
        if not isinstance(doc, dict) or doc.get("version") != VERSION:
            raise ValueError(f"{self.path}: a damage ledger of version {doc.get('version') if isinstance(doc, dict) else '?'}"
                             f", this seclake reads {VERSION}")
        return doc["damage"]

    def _write(self, entries: list[dict[str, Any]]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(orjson.dumps({"version": VERSION, "damage": entries}, option=orjson.OPT_INDENT_2))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._cached = None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # The server records at start while an operator may acknowledge: one at a time.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield


def _plain(d: dict[str, Any]) -> dict[str, Any]:
    keys = ("segment", "start", "end", "kind", "lost", "quarantine", "message")
    return {k: list(d[k]) if isinstance(d.get(k), tuple) else d.get(k) for k in keys}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
