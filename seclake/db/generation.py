"""The access generation: one number that changes whenever access may have.

Any committed change to a user, a session, an API token, a custom role or a
data policy adds one to ``access_generation.value`` in the same transaction.
The counting is done here, by session events, rather than in each service
that writes those tables, so a write added later cannot forget it.

Readers (seclake.service.authentication) cache what a token resolves to and
reuse it only while the generation they read it under is still current; one
small read per call replaces the joins and policy lookups, and a change made
on any API node sharing the database reaches the next call on every node.

Columns written while callers merely call (when a session was last seen,
when a token was last used, when a user last logged in) grant and revoke
nothing, so changing only those does not count.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from sqlalchemy import event, inspect, update
from sqlalchemy.orm import ORMExecuteState, Session

from seclake.db.database import Database
from seclake.db.models import AccessGeneration, ApiToken, CustomRole, DataPolicy, User, UserSession

WATCHED = (User, UserSession, ApiToken, CustomRole, DataPolicy)
BOOKKEEPING = frozenset({"last_seen", "last_used", "last_login"})

_BUMP = update(AccessGeneration).where(AccessGeneration.id == 1).values(value=AccessGeneration.value + 1)


def current(db: Database) -> int:
    """The generation as committed now (one tiny read, made on every call)."""
    return db.read_counter("access_generation")


def _changes_access(obj: Any) -> bool:
    state = inspect(obj)
    return any(
        attr.key not in BOOKKEEPING and attr.history.has_changes() for attr in state.attrs
    )


@event.listens_for(Session, "before_flush")
def _count_changed_objects(session: Session, _context: Any, _instances: Any) -> None:
    watched = [o for o in chain(session.new, session.deleted, session.dirty) if isinstance(o, WATCHED)]
    if any(o in session.new or o in session.deleted or _changes_access(o) for o in watched):
        session.execute(_BUMP)


@event.listens_for(Session, "do_orm_execute")
def _count_bulk_statements(state: ORMExecuteState) -> None:
    # delete(UserSession).where(...) and friends bypass the flush.
    if (state.is_update or state.is_delete) and state.bind_mapper is not None:
        if issubclass(state.bind_mapper.class_, WATCHED):
            state.session.execute(_BUMP)
