"""The split catalog: the only mutable state of the lake.

A split row goes staged -> published -> marked (for deletion). Publication of
new splits, the write-ahead log checkpoint they cover, and the marking of the
splits they replace happen in one transaction, so after any crash the lake is
either before or after a change, never between.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import JSON, BigInteger, Integer, String, select, update
from sqlalchemy.orm import Mapped, mapped_column

from seclake.db.base import Base, UTCDateTime
from seclake.db.database import Database
from seclake.storage.customers import Customers, from_stored
from seclake.storage.pathname import UnsafeName
from seclake.storage.split import SplitMeta

STAGED, PUBLISHED, MARKED = "staged", "published", "marked"


class SplitRow(Base):
    __tablename__ = "splits"

    split_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    dataset: Mapped[str] = mapped_column(String(32), index=True)
    time_min: Mapped[int] = mapped_column(BigInteger)
    time_max: Mapped[int] = mapped_column(BigInteger)
    num_records: Mapped[int] = mapped_column(BigInteger)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    seq_min: Mapped[int] = mapped_column(BigInteger)
    seq_max: Mapped[int] = mapped_column(BigInteger)
    format_version: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The split's customer signatures (storage/customers.py), so a node that
    # lists splits from the catalog prunes them as the lake's owner does;
    # NULL: unknown.
    customers: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)


class CheckpointRow(Base):
    """How far the write-ahead log has been turned into published splits."""

    __tablename__ = "lake_checkpoint"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)


@dataclass(frozen=True)
class CatalogEntry:
    split_id: str
    dataset: str
    time_min: int
    time_max: int
    num_records: int
    size_bytes: int
    state: str
    # When the split was staged, in epoch milliseconds (merges wait for quiet days).
    created_ms: int = 0
    customers: Customers = None


def _entry(row: SplitRow) -> CatalogEntry:
    return CatalogEntry(
        row.split_id, row.dataset, row.time_min, row.time_max, row.num_records, row.size_bytes, row.state,
        int(row.created_at.timestamp() * 1000), from_stored(row.customers),
    )


class CatalogRefused(RuntimeError):
    """The catalog names splits seclake never writes: it was altered, and nothing is made of it."""


# Bad rows a refusal names one by one; the rest are counted.
REFUSAL_NAMES = 5


class Catalog:
    def __init__(self, db: Database):
        self.db = db

    def check(self) -> None:
        """Refuse (``CatalogRefused``) a catalog with a row of any state whose
        dataset or split id is not what seclake writes (``layout.check_split``).

        Called before anything is made of the catalog (a lake's start, a
        backup): a row is turned into a directory to open, copy or delete,
        and a restored backup naming ``../../../../victim`` had retention
        delete that directory. Refusing names every bad row, so an operator
        sees the whole damage in one go; nothing is opened or deleted.
        """
        from seclake.storage.layout import check_split  # here: layout -> merge -> catalog

        with self.db.session() as s:
            rows = s.execute(select(SplitRow.split_id, SplitRow.dataset, SplitRow.state)).all()
        bad = []
        for split_id, dataset, state in rows:
            try:
                check_split(dataset, split_id, f"table splits, a {state} row")
            except UnsafeName as e:
                bad.append(str(e))
        if bad:
            more = f"; and {len(bad) - REFUSAL_NAMES} more rows" if len(bad) > REFUSAL_NAMES else ""
            raise CatalogRefused(
                f"the split catalog in {self.db.url.render_as_string(hide_password=True)} names "
                f"{len(bad)} split(s) seclake never writes, so nothing was opened or deleted: "
                f"{'; '.join(bad[:REFUSAL_NAMES])}{more}. The database was altered or is not this lake's: "
                "restore a backup you trust, or delete those rows (docs/operations.md, \"Backup and restore\")"
            )

    def checkpoint(self) -> int:
        with self.db.session() as s:
            row = s.get(CheckpointRow, "wal")
            return row.seq if row else 0

    def stage(self, metas: Sequence[SplitMeta]) -> None:
        """Record splits being uploaded to a split store, not yet visible to searches.

        A row still staged at start is what a crash mid-upload left: the lake
        deletes its objects and forgets it.
        """
        self._add(metas, STAGED)

    def publish(
        self,
        metas: Sequence[SplitMeta],
        *,
        checkpoint: int | None = None,
        replaces: Iterable[str] = (),
        staged: bool = False,
    ) -> None:
        """Publish splits (``staged``: rows ``stage`` added), mark those they replace, move the checkpoint: one transaction."""
        now = datetime.now(UTC)
        with self.db.session(write=True) as s:
            if staged and metas:
                ids = [m.split_id for m in metas]
                done = s.execute(
                    update(SplitRow)
                    .where(SplitRow.split_id.in_(ids), SplitRow.state == STAGED)
                    .values(state=PUBLISHED, updated_at=now)
                )
                if done.rowcount != len(ids):
                    raise RuntimeError(f"publishing splits {ids}: only {done.rowcount} were staged")
            else:
                self._insert(s, metas, PUBLISHED, now)
            replaced = list(replaces)
            if replaced:
                s.execute(
                    update(SplitRow)
                    .where(SplitRow.split_id.in_(replaced), SplitRow.state == PUBLISHED)
                    .values(state=MARKED, updated_at=now)
                )
            if checkpoint is not None:
                row = s.get(CheckpointRow, "wal")
                if row is None:
                    s.add(CheckpointRow(name="wal", seq=checkpoint))
                elif checkpoint > row.seq:
                    row.seq = checkpoint

    def _add(self, metas: Sequence[SplitMeta], state: str) -> None:
        with self.db.session(write=True) as s:
            self._insert(s, metas, state, datetime.now(UTC))

    @staticmethod
    def _insert(s, metas: Sequence[SplitMeta], state: str, now: datetime) -> None:
        for m in metas:
            s.add(
                SplitRow(
                    split_id=m.split_id,
                    dataset=m.dataset,
                    time_min=m.time_min,
                    time_max=m.time_max,
                    num_records=m.num_records,
                    size_bytes=m.size_bytes,
                    seq_min=m.seq_min,
                    seq_max=m.seq_max,
                    format_version=m.format_version,
                    state=state,
                    created_at=now,
                    updated_at=now,
                    customers=None if m.customers is None else list(m.customers),
                )
            )

    def mark(self, split_ids: Iterable[str]) -> None:
        self.publish([], replaces=split_ids)

    def forget(self, split_ids: Iterable[str]) -> None:
        ids = list(split_ids)
        if not ids:
            return
        with self.db.session(write=True) as s:
            for row in s.scalars(select(SplitRow).where(SplitRow.split_id.in_(ids))):
                s.delete(row)

    def entries(self, state: str = PUBLISHED, dataset: str | None = None) -> list[CatalogEntry]:
        with self.db.session() as s:
            q = select(SplitRow).where(SplitRow.state == state)
            if dataset is not None:
                q = q.where(SplitRow.dataset == dataset)
            return [_entry(r) for r in s.scalars(q.order_by(SplitRow.time_min, SplitRow.split_id))]
