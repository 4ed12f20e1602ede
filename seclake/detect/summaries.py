"""The behavior summaries: stored in the metadata database, triaged, searched.

One row per summary (one key, one UTC day). The row keeps the summary
document as JSON plus the few columns SQL filters on. Behaviors are folded
in by ``apply`` inside the caller's transaction: the detector saves its
progress in the same transaction, so each behavior is counted exactly once
even across crashes. Callers of ``apply`` are serialized by the detector's
lock; on PostgreSQL the rows read are locked (``SELECT ... FOR UPDATE``) so
a triage update in between waits rather than being overwritten, and SQLite
write sessions begin ``IMMEDIATE`` to the same end.

Searches read the documents in the requested range and answer with the
in-memory engine, so they obey query-semantics.md exactly.

Field names: summaries hold ``behaviors`` (a list); ``behavior`` is accepted
as another name for it in queries, filters and facets, because clients
facet on it as on timeline search.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator
from pydantic_core import PydanticCustomError
from sqlalchemy import JSON, BigInteger, String, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from seclake.db.base import Base
from seclake.db.database import Database
from seclake.detect.risk import MODEL
from seclake.detect.scorelevel import Bands
from seclake.detect.state import DetectorProgress
from seclake.detect.summary import STATUSES, fold, id_of, rescore
from seclake.errors import LimitExceeded, NotFound
from seclake.model import Closed, Flag, Text, Whole
from seclake.record.dataset import SUMMARIES
from seclake.search.memory import search_records
from seclake.search.plan import SearchPlan
from seclake.search.root import SearchResult

log = logging.getLogger("seclake.detect")

# The summary dataset as users name its fields (see the module docstring).
SUMMARY_FIELDS = dataclasses.replace(SUMMARIES, aliases=(("behavior.", "behaviors."),))

MAX_ID = 64
MAX_COMMENT = 10_000
MAX_COMMENTS = 1_000
MAX_SCORE_ADJUST = 1_000_000
# A caller's data policy as a test of one summary document.
Visible = Callable[[dict[str, Any]], bool]
# Columns that a range on these record paths can be prefiltered by.
RANGE_COLUMNS = {"from": "from_ms", "to": "to_ms", "updatedOn": "updated_on"}


def _comment(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "must not be blank")
    return value


class Triage(Closed):
    """One triage step of a summary (``ds/behavior_incident_update``): any
    status may follow any other; every change is recorded as a comment."""

    id: Annotated[Text, Field(min_length=1, max_length=MAX_ID, description="The summary's id.")]
    status: Literal[STATUSES] | None = Field(  # type: ignore[valid-type]
        None, description="The summary's new triage status: new, acknowledged or resolved.")
    comment: Annotated[Text, Field(max_length=MAX_COMMENT), AfterValidator(_comment)] | None = Field(
        None, description="A comment added to the summary's history, with the caller's name and the time.")
    incident: Flag | None = Field(None, description="Whether the summary is an incident.")
    scoreAdjust: Annotated[Whole, Field(ge=-MAX_SCORE_ADJUST, le=MAX_SCORE_ADJUST)] | None = Field(
        None, description="Added to the risk model's score (docs/rules.md); the summary's level follows.")

    @model_validator(mode="after")
    def _something(self) -> Triage:
        if self.status is None and self.comment is None and self.incident is None and self.scoreAdjust is None:
            raise PydanticCustomError("nothing", "nothing to change: send status, comment, incident or scoreAdjust")
        return self


class SummaryRow(Base):
    __tablename__ = "behavior_summaries"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(512))
    key_type: Mapped[str] = mapped_column(String(64))
    day: Mapped[str] = mapped_column(String(10))
    from_ms: Mapped[int] = mapped_column(BigInteger, index=True)
    to_ms: Mapped[int] = mapped_column(BigInteger, index=True)
    risk_score: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))
    updated_on: Mapped[int] = mapped_column(BigInteger, index=True)
    customer: Mapped[str] = mapped_column(String(256))
    doc: Mapped[dict[str, Any]] = mapped_column(JSON)

    def set_doc(self, doc: dict[str, Any]) -> None:
        """Store the document and the columns derived from it, always together."""
        self.key = doc["key"][:512]
        self.key_type = doc["keyType"][:64]
        self.day = doc["dayIndex"]
        self.from_ms = doc["from"]
        self.to_ms = doc["to"]
        self.risk_score = doc["riskScore"]
        self.status = doc["status"]
        self.updated_on = doc["updatedOn"]
        self.customer = doc["customer"][:256]
        self.doc = doc


class SummaryStore:
    def __init__(self, db: Database, bands: Bands, *, max_attribute_values: int = 20, max_comments: int = MAX_COMMENTS):
        self.db = db
        self.bands = tuple(bands)
        self.max_attribute_values = max_attribute_values
        self.max_comments = max_comments
        self.dataset = SUMMARY_FIELDS
        # Told of every fold and triage inside its transaction (notify/notifier.py): what
        # they write commits or rolls back with the summaries.
        self.observers: list[Any] = []

    def apply(self, session: Session, behaviors: Iterable[dict[str, Any]], now_ms: int) -> list[str]:
        """Fold behaviors into their summaries in ``session``; the ids touched, in first-seen order."""
        groups: dict[str, list[dict[str, Any]]] = {}
        for b in behaviors:
            groups.setdefault(id_of(b), []).append(b)
        changes: list[tuple[dict[str, Any] | None, dict[str, Any]]] = []
        for sid, group in groups.items():
            row = session.get(SummaryRow, sid, with_for_update=True)
            doc = row.doc if row is not None else None
            before = doc
            for b in group:
                doc = fold(doc, b, bands=self.bands, now_ms=now_ms, max_attribute_values=self.max_attribute_values)
            assert doc is not None
            if row is None:
                row = SummaryRow(id=sid)
                row.set_doc(doc)
                session.add(row)
            else:
                row.set_doc(doc)
            changes.append((before, doc))
        for observer in self.observers:
            observer.folded(session, groups, changes, now_ms)
        return list(groups)

    def rescore_all(self) -> int:
        """Score every summary stored under an earlier risk model with this one; how many were.

        Run at start (``Detector.restore``), once: a row ``risk_model`` of
        ``detector_progress`` holds the model the stored summaries have, so
        later starts read one row. Every summary then reads the same model,
        whatever version folded its behaviors (``scoreAdjust`` kept).
        """
        with self.db.session(write=True) as s:
            done = s.get(DetectorProgress, "risk_model", with_for_update=True)
            if done is not None and done.seq >= MODEL:
                return 0
            count = 0
            for row in s.scalars(select(SummaryRow)):
                if row.doc.get("riskModel") != MODEL:
                    # A new document: the JSON column is written only when assigned a changed value.
                    row.set_doc(rescore(copy.deepcopy(row.doc), self.bands))
                    count += 1
            if done is None:
                s.add(DetectorProgress(name="risk_model", seq=MODEL, sequence=count))
            else:
                done.seq, done.sequence = MODEL, count
        if count:
            log.info("scored %d behavior summaries again with risk model %d (distinct rules and tactics)",
                     count, MODEL)
        return count

    def get(self, summary_id: str, *, visible: Visible | None = None) -> dict[str, Any]:
        """``visible``: the caller's data policy; a summary it hides is answered as an unknown id."""
        with self.db.session() as s:
            row = s.get(SummaryRow, summary_id)
            if row is None or (visible is not None and not visible(row.doc)):
                raise NotFound(f"no behavior summary with id {summary_id!r}")
            return row.doc

    def update_incident(
        self, triage: Triage, *, username: str, now_ms: int, visible: Visible | None = None,
    ) -> dict[str, Any]:
        """Triage one summary; every change is recorded as a comment naming who and what.

        ``visible`` is the caller's data policy: a summary it hides is
        answered exactly as an unknown id, before anything about the summary
        is looked at.
        """
        sid, status, comment = triage.id, triage.status, triage.comment
        incident, score_adjust = triage.incident, triage.scoreAdjust
        with self.db.session(write=True) as s:
            row = s.get(SummaryRow, sid, with_for_update=True)
            if row is None or (visible is not None and not visible(row.doc)):
                raise NotFound(f"no behavior summary with id {sid!r}")
            doc = dict(row.doc)
            actions = []
            if status is not None and status != doc["status"]:
                actions.append(f"status: {doc['status']} -> {status}")
                doc["status"] = status
            if incident is not None and incident != doc["incident"]:
                actions.append(f"incident: {_json(doc['incident'])} -> {_json(incident)}")
                doc["incident"] = incident
            if score_adjust is not None and score_adjust != doc["scoreAdjust"]:
                actions.append(f"scoreAdjust: {doc['scoreAdjust']} -> {score_adjust}")
                doc["scoreAdjust"] = score_adjust
                rescore(doc, self.bands)
            if not actions and comment is None:
                return doc  # nothing changed: the same state again is not news
            comments = list(doc.get("comments") or [])
            if len(comments) >= self.max_comments:
                raise LimitExceeded("comments on one behavior summary", len(comments) + 1, self.max_comments)
            comments.append({"content": comment or "", "actions": actions, "username": username, "createdOn": now_ms})
            doc["comments"] = comments
            doc["updatedOn"] = now_ms
            before = row.doc
            row.set_doc(doc)
            for observer in self.observers:
                observer.triaged(s, before, doc, now_ms)
            return doc

    def time_bounds(self) -> tuple[int, int] | None:
        """The earliest ``from`` and latest ``from``, or None with no summaries (histograms without a range)."""
        with self.db.session() as s:
            lo, hi = s.execute(select(func.min(SummaryRow.from_ms), func.max(SummaryRow.from_ms))).one()
        return None if lo is None else (lo, hi)

    def search(self, plan: SearchPlan) -> SearchResult:
        """Exact: the SQL range narrows the rows read, the memory engine decides."""
        query = select(SummaryRow.id, SummaryRow.doc)
        column = RANGE_COLUMNS.get(plan.range_path or self.dataset.time_field)
        if column is not None:
            col = getattr(SummaryRow, column)
            if plan.range_from is not None:
                query = query.where(col >= plan.range_from)
            if plan.range_to is not None:
                query = query.where(col <= plan.range_to)
        with self.db.session() as s:
            records = [(sid, doc) for sid, doc in s.execute(query)]
        return search_records(records, plan, self.dataset)


def _json(value: bool) -> str:
    return "true" if value else "false"
