"""The detector's persistent state: history, signal windows, progress.

The detector runs in the import path, before the write-ahead log append, so
its outputs (behaviors) are durable together with the records that caused
them. Its state is saved here every commit interval with the log sequence
it corresponds to (``detector_progress``); after a crash the records logged
since are run through the detector again, state only, which brings the
state back exactly (detection is a deterministic function of the log).

History and windows are kept per customer (the record's ``@customer``,
"" for none): one customer's records never count toward another's
threshold or change its first-seen flags.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from seclake.db.base import Base


class SeenBehavior(Base):
    """A behavior that occurred at least once (BehaviorFirstSeen)."""

    __tablename__ = "seen_behaviors"

    customer: Mapped[str] = mapped_column(String(128), primary_key=True)
    behavior: Mapped[str] = mapped_column(String(200), primary_key=True)


class SeenKey(Base):
    """A key that occurred in some behavior (KeyFirstSeen)."""

    __tablename__ = "seen_keys"

    customer: Mapped[str] = mapped_column(String(128), primary_key=True)
    key_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(512), primary_key=True)


class SeenKeyBehavior(Base):
    """A key that had a behavior (KeyBehaviorFirstSeen, ReOccurrence)."""

    __tablename__ = "seen_key_behaviors"

    customer: Mapped[str] = mapped_column(String(128), primary_key=True)
    key_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(512), primary_key=True)
    behavior: Mapped[str] = mapped_column(String(200), primary_key=True)


class SignalState(Base):
    """The open threshold window of one rule, customer and key, as JSON."""

    __tablename__ = "signal_windows"

    rule: Mapped[str] = mapped_column(String(100), primary_key=True)
    customer: Mapped[str] = mapped_column(String(128), primary_key=True)
    key: Mapped[str] = mapped_column(String(512), primary_key=True)
    state: Mapped[str] = mapped_column(Text)


class DetectorProgress(Base):
    """Up to which log sequence the saved state is exact; the behavior counter."""

    __tablename__ = "detector_progress"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    sequence: Mapped[int] = mapped_column(BigInteger)


class SeenValue(Base):
    """A (key, value) pair a ``firstSeen`` rule fired on: it never fires on it again."""

    __tablename__ = "seen_values"

    customer: Mapped[str] = mapped_column(String(128), primary_key=True)
    rule: Mapped[str] = mapped_column(String(100), primary_key=True)
    key: Mapped[str] = mapped_column(String(512), primary_key=True)
    value: Mapped[str] = mapped_column(String(512), primary_key=True)
