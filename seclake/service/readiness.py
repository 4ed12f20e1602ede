"""Whether this node serves complete answers (``GET /readyz``), and why not.

A node is ready when its database is migrated and answers, its components
have started, the write-ahead log it replayed at start is searchable again
(ingest nodes: until then, records acknowledged before a restart are
missing from answers), and, in cluster mode, at least one searcher is
reachable. Searches still answer while a node is not ready; they say so
(``incomplete`` in the reply, ``api/calls/events.py``).

Damage the write-ahead log found in acknowledged data (``storage/damage.py``)
does not make a node unready: it serves every record it could read. The
check ``log_damage`` passes and names it, as ``/healthz`` does, until an
operator acknowledges it (``seclake lake acknowledge-damage``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

log = logging.getLogger("seclake.readiness")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


class Readiness:
    def __init__(self, services: Any):
        self.services = services
        self.prepared = False  # set once migrations ran (Services.prepare)
        self.started = False  # set once every component started (Services.start)
        self._was_ready = False

    def checks(self, *, database: bool = True) -> list[Check]:
        """Every check, in order; ``database`` False skips the round trip
        (searches ask on every call, and the database answered them anyway)."""
        s = self.services
        out = [Check("migrations", self.prepared, "database schema up to date" if self.prepared else "not migrated yet")]
        if database:
            out.append(self._database())
        out.append(Check("started", self.started, "components running" if self.started else "starting"))
        replay_left = getattr(s.lake, "replay_left", None)
        if replay_left is not None:
            left = replay_left()
            out.append(Check(
                "log_replayed", left == 0,
                "the write-ahead log is searchable" if left == 0
                else f"{left} records of the write-ahead log replayed at start are not searchable yet",
            ))
        if self._ledger() is not None:
            out.append(self._log_damage())
        directory = getattr(s.search.leaves, "directory", None)
        if directory is not None:  # cluster mode: the searchers run the searches
            out.append(self._searchers(directory))
        return out

    def ready(self, *, database: bool = True) -> bool:
        ready = all(c.ok for c in self.checks(database=database))
        if ready and not self._was_ready:
            self._was_ready = True
            log.info("ready: every check passes")
        return ready

    def why_not(self) -> str | None:
        """What a search reply says while the node is not ready, or None."""
        failing = [c.detail for c in self.checks(database=False) if not c.ok]
        return "; ".join(failing) if failing else None

    def log_damage(self) -> list[dict[str, Any]]:
        """The log's damage to acknowledged data no operator has acknowledged yet."""
        ledger = self._ledger()
        return ledger.unacknowledged() if ledger is not None else []

    def _ledger(self) -> Any:
        return getattr(getattr(self.services.lake, "wal", None), "ledger", None)

    def _log_damage(self) -> Check:
        damage = self.log_damage()
        if not damage:
            return Check("log_damage", True, "no unacknowledged damage in the write-ahead log")
        n = len(damage)
        return Check("log_damage", True, (
            f"{n} damaged range{'s' if n > 1 else ''} of the write-ahead log not acknowledged (this node serves "
            "every record it could read; `seclake lake check` lists them, `seclake lake acknowledge-damage` once "
            "dealt with): " + "; ".join(d["message"] for d in damage)))

    def _database(self) -> Check:
        try:
            with self.services.db.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return Check("database", True, "answers")
        except Exception as e:  # reported, not raised: readiness says what is wrong
            return Check("database", False, f"{type(e).__name__}: {str(e)[:200]}")

    @staticmethod
    def _searchers(directory: Any) -> Check:
        try:
            n = len(directory.live())
        except Exception as e:
            return Check("searchers", False, f"cannot list searchers: {type(e).__name__}: {str(e)[:200]}")
        return Check("searchers", n > 0, f"{n} searcher(s) reachable" if n else "no searcher reachable")
