"""History flags of behaviors: what was seen before, kept across restarts.

    BehaviorFirstSeen     this behavior never occurred before (any key)
    KeyFirstSeen          this key never occurred in any behavior
    KeyBehaviorFirstSeen  this key never had this behavior
    ReOccurrence          this key had this behavior before
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from seclake.detect.state import SeenBehavior, SeenKey, SeenKeyBehavior


class History:
    def __init__(self) -> None:
        self.behaviors: set[str] = set()
        self.keys: set[tuple[str, str]] = set()
        self.key_behaviors: set[tuple[str, str, str]] = set()
        self._new_behaviors: list[str] = []
        self._new_keys: list[tuple[str, str]] = []
        self._new_key_behaviors: list[tuple[str, str, str]] = []

    def observe(self, key_type: str, key: str, behavior: str) -> dict[str, bool]:
        """The flags of one behavior occurrence, which it then joins."""
        kb = (key_type, key, behavior)
        flags = {
            "BehaviorFirstSeen": behavior not in self.behaviors,
            "KeyFirstSeen": (key_type, key) not in self.keys,
            "KeyBehaviorFirstSeen": kb not in self.key_behaviors,
        }
        flags["ReOccurrence"] = not flags["KeyBehaviorFirstSeen"]
        if flags["BehaviorFirstSeen"]:
            self.behaviors.add(behavior)
            self._new_behaviors.append(behavior)
        if flags["KeyFirstSeen"]:
            self.keys.add((key_type, key))
            self._new_keys.append((key_type, key))
        if flags["KeyBehaviorFirstSeen"]:
            self.key_behaviors.add(kb)
            self._new_key_behaviors.append(kb)
        return flags

    def load(self, session: Session) -> None:
        self.behaviors = set(session.scalars(select(SeenBehavior.behavior)))
        self.keys = {(r.key_type, r.key) for r in session.scalars(select(SeenKey))}
        self.key_behaviors = {(r.key_type, r.key, r.behavior) for r in session.scalars(select(SeenKeyBehavior))}

    def take_new(self) -> tuple[list, list, list]:
        """What was added since the last call, to be saved."""
        out = (self._new_behaviors, self._new_keys, self._new_key_behaviors)
        self._new_behaviors, self._new_keys, self._new_key_behaviors = [], [], []
        return out

    @staticmethod
    def save(session: Session, new: tuple[list, list, list]) -> None:
        behaviors, keys, key_behaviors = new
        session.add_all(SeenBehavior(behavior=b) for b in behaviors)
        session.add_all(SeenKey(key_type=t, key=k) for t, k in keys)
        session.add_all(SeenKeyBehavior(key_type=t, key=k, behavior=b) for t, k, b in key_behaviors)
