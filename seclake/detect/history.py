"""History flags of behaviors: what was seen before, kept across restarts.

    BehaviorFirstSeen     this behavior never occurred before (any key)
    KeyFirstSeen          this key never occurred in any behavior
    KeyBehaviorFirstSeen  this key never had this behavior
    ReOccurrence          this key had this behavior before

and, for rules with ``firstSeen`` (``first_value``), the (key, value) pairs
each rule already fired on, so such a rule fires once per pair: ever, across
restarts (the pairs are saved with the rest, and the log replayed since).

Each customer has a history of its own: another customer's behaviors and
keys must not show through these flags (docs/security.md).

The tables (``detect/state.py``) hold the whole history; memory holds at
most ``capacity`` keys and as many (key, behavior) pairs, the ones used
last. While everything fits, memory is the whole history and a miss is the
answer. Once an entry had to be dropped, a miss asks the table (one
primary-key read: only for a behavior whose key was not seen lately, and
behaviors are a small share of the records). Entries not saved yet are
never dropped, so the flags are exact at every size. Behaviors (without
keys) are few: always all of them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager

from cachetools import LRUCache
from sqlalchemy import select
from sqlalchemy.orm import Session

from seclake.detect.state import SeenBehavior, SeenKey, SeenKeyBehavior, SeenValue

# ~250 bytes an entry: two families at this size stay near 100 MB at worst.
CAPACITY = 200_000


class _Seen:
    """One family of history entries: the recent ones in memory, all in ``table``."""

    def __init__(self, table, columns: tuple[str, ...], capacity: int,
                 session: Callable[[], AbstractContextManager[Session]] | None):
        self.table = table
        self.columns = columns
        self.session = session
        self.recent: LRUCache = LRUCache(maxsize=capacity)
        # Not in the table yet, in the order seen: left here until ``saved``,
        # so a failed save leaves them for the next one.
        self.unsaved: dict[tuple, None] = {}
        # True while memory holds every saved entry: a miss is then the answer.
        self.complete = True
        self.dropped = 0

    def seen(self, entry: tuple) -> bool:
        if entry in self.unsaved:
            return True
        if self.recent.get(entry) is not None:  # get: a hit moves it to the most recently used end
            return True
        if self.complete or self.session is None:
            return False
        with self.session() as s:
            where = [getattr(self.table, c) == v for c, v in zip(self.columns, entry)]
            found = s.scalar(select(getattr(self.table, self.columns[0])).where(*where).limit(1)) is not None
        if found:
            self._remember(entry)
        return found

    def add(self, entry: tuple) -> None:
        self.unsaved[entry] = None

    def _remember(self, entry: tuple) -> None:
        if len(self.recent) >= self.recent.maxsize:
            self.recent.popitem()
            self.dropped += 1
            self.complete = False
        self.recent[entry] = True

    def load(self, session: Session) -> None:
        limit = self.recent.maxsize
        query = select(*(getattr(self.table, c) for c in self.columns))
        rows = session.execute(query if limit >= sys.maxsize else query.limit(limit + 1)).all()
        self.recent.clear()
        self.unsaved = {}
        for row in rows[:limit]:
            self.recent[tuple(row)] = True
        self.complete = len(rows) <= limit

    def saved(self, entries: list[tuple]) -> None:
        """``entries`` (from ``History.new``) are in the table now."""
        for entry in entries:
            del self.unsaved[entry]
            self._remember(entry)


class History:
    def __init__(self, session: Callable[[], AbstractContextManager[Session]] | None = None,
                 capacity: int = CAPACITY) -> None:
        """``session``: a read session of the database holding the tables (misses
        past ``capacity`` are asked there); None keeps everything in memory."""
        self.behaviors: set[tuple[str, str]] = set()
        self._new_behaviors: dict[tuple[str, str], None] = {}  # unsaved, as ``_Seen.unsaved``
        capacity = capacity if session is not None else sys.maxsize
        self.keys = _Seen(SeenKey, ("customer", "key_type", "key"), capacity, session)
        self.key_behaviors = _Seen(SeenKeyBehavior, ("customer", "key_type", "key", "behavior"), capacity, session)
        self.values = _Seen(SeenValue, ("customer", "rule", "key", "value"), capacity, session)

    @property
    def dropped(self) -> int:
        """Entries dropped from memory since start (still in the tables)."""
        return self.keys.dropped + self.key_behaviors.dropped + self.values.dropped

    def first_value(self, customer: str, rule: str, key: str, value: str) -> bool:
        """Whether ``rule`` meets (``key``, ``value``) of ``customer`` for the first time; it is then seen."""
        entry = (customer, rule, key, value)
        if self.values.seen(entry):
            return False
        self.values.add(entry)
        return True

    def observe(self, customer: str, key_type: str, key: str, behavior: str) -> dict[str, bool]:
        """The flags of one behavior occurrence of ``customer``, which it then joins."""
        b, k, kb = (customer, behavior), (customer, key_type, key), (customer, key_type, key, behavior)
        flags = {
            "BehaviorFirstSeen": b not in self.behaviors,
            "KeyFirstSeen": not self.keys.seen(k),
            "KeyBehaviorFirstSeen": not self.key_behaviors.seen(kb),
        }
        flags["ReOccurrence"] = not flags["KeyBehaviorFirstSeen"]
        if flags["BehaviorFirstSeen"]:
            self.behaviors.add(b)
            self._new_behaviors[b] = None
        if flags["KeyFirstSeen"]:
            self.keys.add(k)
        if flags["KeyBehaviorFirstSeen"]:
            self.key_behaviors.add(kb)
        return flags

    def load(self, session: Session) -> None:
        """The saved history, and nothing unsaved."""
        self.behaviors = {(r.customer, r.behavior) for r in session.scalars(select(SeenBehavior))}
        self._new_behaviors = {}
        self.keys.load(session)
        self.key_behaviors.load(session)
        self.values.load(session)

    def new(self) -> tuple[list, list, list, list]:
        """What is not saved yet, in the order seen: to ``save``, then ``saved``.
        Until ``saved`` it stays new, so a failed save needs nothing undone."""
        return (list(self._new_behaviors), list(self.keys.unsaved), list(self.key_behaviors.unsaved),
                list(self.values.unsaved))

    def saved(self, new: tuple[list, list, list, list]) -> None:
        for b in new[0]:
            del self._new_behaviors[b]
        self.keys.saved(new[1])
        self.key_behaviors.saved(new[2])
        self.values.saved(new[3])

    @staticmethod
    def save(session: Session, new: tuple[list, list, list, list]) -> None:
        behaviors, keys, key_behaviors, values = new
        session.add_all(SeenBehavior(customer=c, behavior=b) for c, b in behaviors)
        session.add_all(SeenKey(customer=c, key_type=t, key=k) for c, t, k in keys)
        session.add_all(SeenKeyBehavior(customer=c, key_type=t, key=k, behavior=b) for c, t, k, b in key_behaviors)
        session.add_all(SeenValue(customer=c, rule=r, key=k, value=v) for c, r, k, v in values)
