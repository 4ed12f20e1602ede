"""The reply of every call, as pydantic models: what ``response`` holds.

Shaped as the clients of this interface read them (spec/http-interface.md,
spec/client-compat.md). Each call names its reply model where it is
registered (``api/calls/``); ``api/openapi.py`` makes the document of them,
and ``tests/api/test_openapi.py`` validates a real server's answers against
them, so the document cannot drift from what is sent. Records whose fields
vary with the data (events, flows, rules) allow members beyond those named.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from seclake.db.models import User
from seclake.model import Closed, Open
from seclake.service.clock import iso
from seclake.service.login import SignIn
from seclake.service.policies import Policy, Role
from seclake.service.roles import rights_of
from seclake.service.tokens import TokenView
from seclake.service.users import NO_PASSWORD

# -- replies of searches (spec 2.6-2.10) ---------------------------------------------


class Bucket(Open):
    key: str | int
    doc_count: int


class Aggregation(Open):
    buckets: list[Bucket]
    TokenEntity: str | None = None
    doc_count_error_upper_bound: int | None = None
    sum_other_doc_count: int | None = None


class EventHit(Open):
    """An event or flow hit (spec 2.6); a flow's _source also holds @metaflow.flow."""

    index: str = Field(alias="_index")
    type: Literal["event", "flow"] = Field(alias="_type")
    id: str = Field(alias="_id")
    docId: int
    source: dict[str, Any] = Field(alias="_source")
    sort: int | float | None = Field(alias="_sort")
    token: bool


class EventHits(Open):
    total: int
    sortFieldType: str
    hits: list[EventHit]


class EventSearchReply(Open):
    took: int
    hits: EventHits
    aggregations: dict[str, Aggregation] | None = None
    query: dict[str, Any]
    terms: list[str]


class WrappedHit(Open):
    """A hit of the search-hit wrapper (spec 2.9); every member present, null where null."""

    score: None = Field(alias="_score")
    index: str = Field(alias="_index")
    type: str = Field(alias="_type")
    id: str = Field(alias="_id")
    uid: str = Field(alias="_uid")
    sort: list[int | float | str]
    source: dict[str, Any] = Field(alias="_source")


class WrapperHits(Open):
    total: int
    max_score: None
    hits: list[WrappedHit]


class Shards(Closed):
    total: int
    successful: int
    failed: int


class HitWrapper(Open):
    """The search-hit wrapper (spec 2.9)."""

    took: int
    scroll_id: str = Field(alias="_scroll_id")
    hits: WrapperHits
    suggest: None
    aggregations: dict[str, Aggregation]
    timed_out: bool
    terminated_early: bool
    shards: Shards = Field(alias="_shards")


class RuleSearchReply(HitWrapper):
    total: int = Field(description="seclake's earlier shape, kept beside the wrapper.")
    buckets: list[dict[str, Any]]


# -- records ---------------------------------------------------------------------------


class UserRecord(Open):
    """A user (spec 2.3) with the clients' OAuth fields."""

    username: str
    email: str
    firstName: str
    lastName: str
    organization: str
    rights: str
    restricted: bool
    disabled: bool
    lastLogin: str | None
    passwordDate: str
    preference: dict[str, Any]
    roles: list[str]
    dataPolicies: list[Any] | None
    APIPolicies: list[Any] | None
    profile: dict[str, Any] | None
    oauthProvider: str
    oauthFlag: bool
    passwordSet: bool
    note: str | None = Field(None, description="auth/userAdd without a password: how to set one.")


def user_record(user: User) -> dict[str, Any]:
    """A user as the clients read it (spec 2.3, ``UserRecord``)."""
    return {
        "username": user.username,
        "email": user.email,
        "firstName": user.first_name,
        "lastName": user.last_name,
        "organization": user.organization,
        "rights": rights_of(user.roles),
        "restricted": user.restricted,
        "disabled": user.disabled,
        "lastLogin": iso(user.last_login),
        "passwordDate": iso(user.password_date),
        "preference": user.preference,
        "roles": list(user.roles),
        "dataPolicies": user.data_policies,
        "APIPolicies": user.api_policies,
        "profile": user.profile,
        "oauthProvider": user.oauth_provider or "",
        "oauthFlag": bool(user.oauth_flag),
        # False: added without a password; signing in with one is refused until it is set.
        "passwordSet": user.password_hash != NO_PASSWORD,
    }


class SessionRecord(Open):
    """auth/login (spec 2.2)."""

    sessionToken: str
    publicKey: str
    userName: str
    createdOn: str
    roles: list[str]
    status: Literal["succeed"]
    fullName: str
    rights: str
    email: str
    organization: str
    name: str
    preference: dict[str, Any]
    timezone: str
    profile: dict[str, Any] | None


def session_record(signed_in: SignIn) -> dict[str, Any]:
    """A new session as the clients read it (spec 2.2, ``SessionRecord``)."""
    user, session = signed_in.user, signed_in.session
    return {
        "sessionToken": signed_in.token,
        "publicKey": session.public_id,
        "userName": user.username,
        "createdOn": iso(session.created_on),
        "roles": list(user.roles),
        "status": "succeed",
        "fullName": " ".join(part for part in (user.first_name, user.last_name) if part) or user.username,
        "rights": rights_of(user.roles),
        "email": user.email,
        "organization": user.organization,
        "name": user.username,
        "preference": user.preference,
        "timezone": str(user.preference.get("timezone", {}).get("value", "UTC")),
        "profile": user.profile,
    }


class TokenRecord(Open):
    id: str = Field(description="A string, as the clients read it.")
    name: str
    description: str
    username: str
    prefix: str
    createdOn: str
    expiresOn: str | None
    lastUsed: str | None
    revokedOn: str | None
    state: Literal["active", "expired", "revoked"]
    disabled: bool
    lastAccess: int
    updatedOn: str
    roles: list[str] | None
    dataPolicies: list[str] | None
    APIPolicies: list[str] | None
    token: str | None = Field(None, description="Only in the answer to add: shown once.")


def token_record(view: TokenView, now: datetime) -> dict[str, Any]:
    """An API token as the clients read it; ``token`` only when just created."""
    token, state = view.token, view.state(now)
    record = {"token": view.secret} if view.secret is not None else {}
    return record | {
        # A string: the clients' token model reads it so (a number fails Go's decoding).
        "id": str(token.id),
        "name": token.name,
        "description": token.description or "",
        "username": view.username,
        "prefix": token.prefix,
        "createdOn": iso(token.created_on),
        "expiresOn": iso(token.expires_on),
        "lastUsed": iso(token.last_used),
        "revokedOn": iso(token.revoked_on),
        "state": state,
        "disabled": state != "active",
        # Epoch milliseconds, 0 when never used (the clients' lastAccess).
        "lastAccess": 0 if token.last_used is None else int(token.last_used.timestamp() * 1000),
        "updatedOn": iso(token.revoked_on or token.created_on),
        # The narrowing this token carries; null: its user's rights as they are.
        "roles": token.roles,
        "dataPolicies": token.data_policies,
        "APIPolicies": token.api_policies,
    }


class TokenList(Open):
    entries: list[TokenRecord]
    tokens: list[TokenRecord] = Field(description="The same list under seclake's earlier name.")


class PolicyRecord(Open):
    name: str
    description: str
    filters: dict[str, str]
    createdOn: str | None
    updatedOn: str | None


def policy_record(policy: Policy) -> dict[str, Any]:
    return {
        "name": policy.name, "description": policy.description, "filters": dict(policy.filters),
        "createdOn": iso(policy.created_on), "updatedOn": iso(policy.updated_on),
    }


class RoleRecord(Open):
    name: str
    description: str
    builtIn: bool
    permissions: list[str]
    APIPolicies: list[str]
    dataPolicies: list[str]
    createdOn: str | None
    updatedOn: str | None


def role_record(role: Role) -> dict[str, Any]:
    return {
        "name": role.name, "description": role.description, "builtIn": role.built_in,
        "permissions": list(role.permissions), "APIPolicies": list(role.api_policies),
        "dataPolicies": list(role.data_policies), "createdOn": iso(role.created_on), "updatedOn": iso(role.updated_on),
    }


class Summary(Open):
    """A behavior summary (spec 2.8) as it is answered."""

    id: str
    key: str
    keyType: str
    riskScore: int
    scoreLevel: str
    summaryList: list[dict[str, Any]]
    status: str
    incident: bool


class ImportReport(Open):
    accepted: int
    raw: int
    rejected: int
    truncated: int
    stored: int
    reasons: list[Any]
    firstDocId: int | None
    lastDocId: int | None


class ListenerRow(Open):
    listener: str = Field(description="scheme://host:port of the listener.")
    vendor: str
    type: str
    customer: str | None
    charset: str | None = Field(default=None, description="The encoding a syslog listener reads its messages in "
                                                          "(its URL's charset=, default utf-8); null for NetFlow.")
    connections: int = Field(description="TCP/TLS connections open now.")
    faults: dict[str, int] = Field(description="Connections closed to make room (evicted_per_address, "
                                   "evicted_listener_full) or for no complete frame in time (first_frame_timeouts, "
                                   "idle_timeouts), failed TLS handshakes, bad frames...")
    limits: dict[str, float] | None = Field(default=None, description="A TCP/TLS listener's connection limits "
                                            "(maxConnections, maxPerAddress, firstFrameSeconds, idleSeconds); "
                                            "null for UDP.")


class SourceRow(Open):
    listener: str
    address: str = Field(description="The sending address.")
    records: int
    bytes: int
    recordsPerSecond: float = Field(description="Over the last 10 seconds.")
    rejected: int
    dropped: int
    firstSeen: int = Field(description="Epoch milliseconds.")
    lastSeen: int = Field(description="Epoch milliseconds.")


class CollectorEntry(Open):
    """A listener in the clients' collector model (ingext-api ``CollectorForWeb``)."""

    id: str
    name: str
    local: bool
    ebpf: bool
    description: str
    createdOn: int
    token: str
    lastPoll: int


class SourcesReply(Closed):
    entries: list[CollectorEntry]
    listeners: list[ListenerRow]
    sources: list[SourceRow]


class CatalogSource(Closed):
    source: str
    records: int


class CatalogField(Closed):
    name: str = Field(description="The name a query uses (user.name for @fields.user.name).")
    path: str = Field(description="The path in the record (_source).")
    type: Literal["keyword", "text", "ip", "number", "date"]
    records: int = Field(description="Matching records that hold the field.")
    sources: dict[str, int] = Field(description="Per source (@source): records that hold the field.")
    examples: list[str] = Field(description="Up to 3 values seen in the newest records.")


class CatalogReply(Open):
    dataType: Literal["event", "flow"]
    total: int = Field(description="Matching records.")
    sources: list[CatalogSource]
    otherSourcesRecords: int = Field(description="Records of sources beyond those listed.")
    truncated: bool = Field(description="More fields than the 1000 listed.")
    fields: list[CatalogField]
