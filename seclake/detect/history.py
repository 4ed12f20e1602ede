"""History flags of behaviors: what was seen before, kept across restarts.

    BehaviorFirstSeen     this behavior never occurred before (any key)
    KeyFirstSeen          this key never occurred in any behavior
    KeyBehaviorFirstSeen  this key never had this behavior
    ReOccurrence          this key had this behavior before

Each customer has a history of its own: another customer's behaviors and
keys must not show through these flags (docs/security.md).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from seclake.detect.state import SeenBehavior, SeenKey, SeenKeyBehavior


class History:
    def __init__(self) -> None:
        # Every entry leads with the customer.
        self.behaviors: set[tuple[str, str]] = set()
        self.keys: set[tuple[str, str, str]] = set()
        self.key_behaviors: set[tuple[str, str, str, str]] = set()
        self._new_behaviors: list[tuple[str, str]] = []
        self._new_keys: list[tuple[str, str, str]] = []
        self._new_key_behaviors: list[tuple[str, str, str, str]] = []

    def observe(self, customer: str, key_type: str, key: str, behavior: str) -> dict[str, bool]:
        """The flags of one behavior occurrence of ``customer``, which it then joins."""
        b, k, kb = (customer, behavior), (customer, key_type, key), (customer, key_type, key, behavior)
        flags = {
            "BehaviorFirstSeen": b not in self.behaviors,
            "KeyFirstSeen": k not in self.keys,
            "KeyBehaviorFirstSeen": kb not in self.key_behaviors,
        }
        flags["ReOccurrence"] = not flags["KeyBehaviorFirstSeen"]
        if flags["BehaviorFirstSeen"]:
            self.behaviors.add(b)
            self._new_behaviors.append(b)
        if flags["KeyFirstSeen"]:
            self.keys.add(k)
            self._new_keys.append(k)
        if flags["KeyBehaviorFirstSeen"]:
            self.key_behaviors.add(kb)
            self._new_key_behaviors.append(kb)
        return flags

    def load(self, session: Session) -> None:
        self.behaviors = {(r.customer, r.behavior) for r in session.scalars(select(SeenBehavior))}
        self.keys = {(r.customer, r.key_type, r.key) for r in session.scalars(select(SeenKey))}
        self.key_behaviors = {
            (r.customer, r.key_type, r.key, r.behavior) for r in session.scalars(select(SeenKeyBehavior))
        }

    def take_new(self) -> tuple[list, list, list]:
        """What was added since the last call, to be saved."""
        out = (self._new_behaviors, self._new_keys, self._new_key_behaviors)
        self._new_behaviors, self._new_keys, self._new_key_behaviors = [], [], []
        return out

    @staticmethod
    def save(session: Session, new: tuple[list, list, list]) -> None:
        behaviors, keys, key_behaviors = new
        session.add_all(SeenBehavior(customer=c, behavior=b) for c, b in behaviors)
        session.add_all(SeenKey(customer=c, key_type=t, key=k) for c, t, k in keys)
        session.add_all(SeenKeyBehavior(customer=c, key_type=t, key=k, behavior=b) for c, t, k, b in key_behaviors)
