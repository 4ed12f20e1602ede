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
    key: str | int = Field(description="The value counted (may be an empty string).")
    doc_count: int = Field(description="Records holding the value.")


class Aggregation(Open):
    buckets: list[Bucket] = Field(description="Values with their record counts, most common first.")
    TokenEntity: str | None = Field(None, description="Event search: empty (the clients read it).")
    doc_count_error_upper_bound: int | None = Field(
        None, description="0: the counts are exact.")
    sum_other_doc_count: int | None = Field(None, description="Records holding values beyond the buckets listed.")


class EventHit(Open):
    """An event or flow hit (spec 2.6); a flow's _source also holds @metaflow.flow."""

    index: str = Field(alias="_index", description="The split the record is stored in.")
    type: Literal["event", "flow"] = Field(alias="_type", description="event or flow.")
    id: str = Field(alias="_id", description="The record's id, 16 hex digits (the same record as docId).")
    docId: int = Field(description="The record's number (the same record as _id), stable across restarts.")
    source: dict[str, Any] = Field(
        alias="_source", description="The record: @message, @timestamp, @sender, @source, @facility, @customer, @tags, @fields, @type.")
    sort: int | float | None = Field(alias="_sort", description="The sort value; for @timestamp epoch milliseconds.")
    token: bool = Field(description="Always false (the clients read it).")


class EventHits(Open):
    total: int = Field(description="Records matching the query and range (exact).")
    sortFieldType: str = Field(description="long: sort values are numbers (epoch milliseconds for @timestamp).")
    hits: list[EventHit] = Field(description="The page of records asked for (fetchOffset, fetchLimit).")


class Highlight(Closed):
    """A value the query matched, so a user interface marks only that (query/echo.highlights)."""

    field: str = Field(description='The record path it matched in ("@fields.user.name"); "*": any string of the record (a term with no field).')
    value: str = Field(description="The value as the query wrote it.")
    text: bool = Field(description="true: matched as words (its tokens of letters and digits, in order, never inside another word); false: the whole value, case-insensitively.")


class EventSearchReply(Open):
    took: int = Field(description="Milliseconds the search took on the server.")
    hits: EventHits = Field(description="Total and the page of hits.")
    aggregations: dict[str, Aggregation] | None = Field(
        None, description="One member per facet (named after its field) and per date facet.")
    query: dict[str, Any] = Field(description="The query as understood (its tree), for the clients that show it.")
    terms: list[str] = Field(description="The words and values the query looks for, for highlighting.")
    highlight: list[Highlight] = Field(description="What each term of the query matched, and where: a field's value, or words.")


class WrappedHit(Open):
    """A hit of the search-hit wrapper (spec 2.9); every member present, null where null."""

    score: None = Field(alias="_score", description="Always null.")
    index: str = Field(alias="_index", description="behavior or behavior_summary (spec 2.7, 2.8).")
    type: str = Field(alias="_type", description="As _index.")
    id: str = Field(alias="_id", description="The behavior's or summary's id.")
    uid: str = Field(alias="_uid", description="_type#_id.")
    sort: list[int | float | str] = Field(description="The sort values of the hit.")
    source: dict[str, Any] = Field(alias="_source", description="The behavior or summary (spec 2.7, 2.8).")


class WrapperHits(Open):
    total: int = Field(description="Hits matching the query and range.")
    max_score: None = Field(description="Always null.")
    hits: list[WrappedHit] = Field(description="The page of hits asked for.")


class Shards(Closed):
    total: int = Field(description="Splits searched.")
    successful: int = Field(description="Splits that answered.")
    failed: int = Field(description="Splits that gave no answer (the counts are partial).")


class HitWrapper(Open):
    """The search-hit wrapper (spec 2.9)."""

    took: int = Field(description="Milliseconds the search took on the server.")
    scroll_id: str = Field(alias="_scroll_id", description="Always empty (no scrolling).")
    hits: WrapperHits = Field(description="Total and the page of hits.")
    suggest: None = Field(description="Always null.")
    aggregations: dict[str, Aggregation] = Field(description="One member per facet, named after its field (spec 2.10).")
    timed_out: bool = Field(description="Always false.")
    terminated_early: bool = Field(description="Always false.")
    shards: Shards = Field(alias="_shards", description="Splits searched, answered and failed.")


class BehaviorSearchReply(HitWrapper):
    """The timeline's search-hit wrapper, with what the query matched."""

    highlight: list[Highlight] = Field(
        description="What each term of the query matched, and where: a field's value, or words.")


class RuleSearchReply(HitWrapper):
    total: int = Field(description="seclake's earlier shape, kept beside the wrapper.")
    buckets: list[dict[str, Any]] = Field(description="The rules of the page, in seclake's earlier shape.")


# -- records ---------------------------------------------------------------------------


class UserRecord(Open):
    """A user (spec 2.3) with the clients' OAuth fields."""

    username: str = Field(description="The name the user signs in with.")
    email: str = Field(description="E-mail address.")
    firstName: str = Field(description="First name.")
    lastName: str = Field(description="Last name.")
    organization: str = Field(description="Organization.")
    rights: str = Field(description="The rights the roles grant, as one string.")
    restricted: bool = Field(description="A restricted user.")
    disabled: bool = Field(description="A disabled user cannot sign in or call.")
    lastLogin: str | None = Field(description="ISO 8601 time of the last sign-in; null when never.")
    passwordDate: str = Field(description="ISO 8601 time the password was set.")
    preference: dict[str, Any] = Field(description="Holds timezone: {value (a time-zone name), policy (Server, GMT)}.")
    roles: list[str] = Field(description="Role names (built-in or custom).")
    dataPolicies: list[Any] | None = Field(
        description="Data policy names: the records the user sees (with those of the roles).")
    APIPolicies: list[Any] | None = Field(
        description="Call patterns the user may call; null or empty: any the roles allow.")
    profile: dict[str, Any] | None = Field(description="Free-form profile object, or null.")
    oauthProvider: str = Field(description="The identity provider of an OAuth user; empty otherwise.")
    oauthFlag: bool = Field(description="True for a user of an identity provider.")
    passwordSet: bool = Field(
        description="False: added without a password; signing in with one is refused until it is set.")
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


class SsoProvider(Open):
    name: str = Field(description="The provider's short name (settings oidc_providers), as users' oauthProvider.")
    displayName: str = Field(description='Shown as "Sign in with <displayName>".')
    signInUrl: str = Field(description="Where the browser goes to sign in (then ?next=/path).")


class SsoProviders(Open):
    """auth/ssoProviders: what the sign-in page offers."""

    providers: list[SsoProvider] = Field(description="One per identity provider configured.")
    localPasswords: bool = Field(description="False: only the break-glass admin signs in with a password.")


class SessionRecord(Open):
    """auth/login (spec 2.2)."""

    sessionToken: str = Field(description="Sent in the Servicetoken header like an API token.")
    publicKey: str = Field(description="The session's public id (as the audit names it).")
    userName: str = Field(description="The user signed in.")
    createdOn: str = Field(description="ISO 8601 time the session began.")
    roles: list[str] = Field(description="The user's role names.")
    status: Literal["succeed"] = Field(description="succeed on a successful sign-in.")
    fullName: str = Field(description="First and last name, else the user name.")
    rights: str = Field(description="The rights the roles grant, as one string.")
    email: str = Field(description="E-mail address.")
    organization: str = Field(description="Organization.")
    name: str = Field(description="The user name again.")
    preference: dict[str, Any] = Field(description="Holds timezone: {value (a time-zone name), policy (Server, GMT)}.")
    timezone: str = Field(description="Time-zone name.")
    profile: dict[str, Any] | None = Field(description="Free-form profile object, or null.")


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
    name: str = Field(description="The token's name, unique per user.")
    description: str = Field(description="What the token is for.")
    username: str = Field(description="The user it acts as.")
    prefix: str = Field(description="Its first characters, to tell tokens apart.")
    createdOn: str = Field(description="ISO 8601 time it was created.")
    expiresOn: str | None = Field(description="ISO 8601 time it expires; null: never.")
    lastUsed: str | None = Field(description="ISO 8601 time of its last call; null: never used.")
    revokedOn: str | None = Field(description="ISO 8601 time it was deleted; null: not deleted.")
    state: Literal["active", "expired", "revoked"] = Field(description="active, expired or revoked.")
    disabled: bool = Field(description="True unless active.")
    lastAccess: int = Field(description="Epoch milliseconds of its last call; 0 when never used.")
    updatedOn: str = Field(description="ISO 8601 time of its last change.")
    roles: list[str] | None = Field(
        description="Some of its user's roles it is narrowed to; null: its user's rights as they are.")
    dataPolicies: list[str] | None = Field(
        description="Data policies narrowing what it sees; null: none beyond its user's.")
    APIPolicies: list[str] | None = Field(description="Call patterns it may call; null: any its user may.")
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
    entries: list[TokenRecord] = Field(description="The tokens (the clients' name).")
    tokens: list[TokenRecord] = Field(description="The same list under seclake's earlier name.")


class PolicyRecord(Open):
    name: str = Field(description="The policy's name.")
    description: str = Field(description="What it is for.")
    filters: dict[str, str] = Field(
        description="Dataset -> Lucene filter: the records of that dataset it lets through, like {\"event\": \"@customer:acme\"}.")
    createdOn: str | None = Field(description="ISO 8601 time it was created.")
    updatedOn: str | None = Field(description="ISO 8601 time of its last change.")


def policy_record(policy: Policy) -> dict[str, Any]:
    return {
        "name": policy.name, "description": policy.description, "filters": dict(policy.filters),
        "createdOn": iso(policy.created_on), "updatedOn": iso(policy.updated_on),
    }


class RoleRecord(Open):
    name: str = Field(description="The role's name.")
    description: str = Field(description="What it is for.")
    builtIn: bool = Field(description="A built-in role (cannot be changed).")
    permissions: list[str] = Field(description="What its holders may do: search, triage, ingest, admin...")
    APIPolicies: list[str] = Field(
        description="Call patterns its holders may call; empty: any their permissions allow.")
    dataPolicies: list[str] = Field(description="Data policies narrowing what its holders see; empty: all data.")
    createdOn: str | None = Field(description="ISO 8601 time it was created; null for built-ins.")
    updatedOn: str | None = Field(description="ISO 8601 time of its last change.")


def role_record(role: Role) -> dict[str, Any]:
    return {
        "name": role.name, "description": role.description, "builtIn": role.built_in,
        "permissions": list(role.permissions), "APIPolicies": list(role.api_policies),
        "dataPolicies": list(role.data_policies), "createdOn": iso(role.created_on), "updatedOn": iso(role.updated_on),
    }


class Summary(Open):
    """A behavior summary (spec 2.8) as it is answered."""

    id: str = Field(description="The summary's id.")
    key: str = Field(description="The entity summarised (an address, a user name...).")
    keyType: str = Field(description="ip, username...")
    riskScore: int = Field(description="The summary's risk score (docs/rules.md, the risk model).")
    scoreLevel: str = Field(description="The score's band: none, low, medium, high, serious, critical.")
    summaryList: list[dict[str, Any]] = Field(description="One element per behavior of the day (spec 2.8).")
    status: str = Field(description="Triage status: new, acknowledged, ...")
    incident: bool = Field(description="Marked as an incident.")


class ImportReport(Open):
    accepted: int = Field(description="Lines stored as records.")
    raw: int = Field(description="Lines no parser understood, stored as raw events.")
    rejected: int = Field(description="Lines refused, with their reasons.")
    truncated: int = Field(description="Lines cut to the longest line kept (64 KiB).")
    stored: int = Field(description="Records written (accepted and raw).")
    reasons: list[Any] = Field(description="line N: field: problem, for each rejected line (the first ones).")
    firstDocId: int | None = Field(description="docId of the first record stored; null when none.")
    lastDocId: int | None = Field(description="docId of the last record stored; null when none.")


class ListenerRow(Open):
    listener: str = Field(description="scheme://host:port of the listener.")
    vendor: str = Field(description="The vendor its records are stored under (@source).")
    type: str = Field(description="The dataset: event or flow.")
    customer: str | None = Field(description="The customer its records are filed under; null: none.")
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
    listener: str = Field(description="scheme://host:port of the listener.")
    address: str = Field(description="The sending address.")
    records: int = Field(description="Records received from the address.")
    bytes: int = Field(description="Bytes received from the address.")
    recordsPerSecond: float = Field(description="Over the last 10 seconds.")
    rejected: int = Field(description="Lines refused.")
    dropped: int = Field(description="Messages dropped (queue full).")
    firstSeen: int = Field(description="Epoch milliseconds.")
    lastSeen: int = Field(description="Epoch milliseconds.")


class CollectorEntry(Open):
    """A listener in the clients' collector model (ingext-api ``CollectorForWeb``)."""

    id: str = Field(description="The listener's URL.")
    name: str = Field(description="The listener's URL.")
    local: bool = Field(description="Always true: on this node.")
    ebpf: bool = Field(description="Always false.")
    description: str = Field(description="The vendor and dataset.")
    createdOn: int = Field(description="Epoch milliseconds the listener started.")
    token: str = Field(description="Always empty.")
    lastPoll: int = Field(description="Epoch milliseconds of its last record; 0: none yet.")


class InventoryRow(Closed):
    source: str = Field(description="The source (@source): the vendor name its records were stored under.")
    dataType: Literal["event", "flow"] = Field(description="The dataset of its records.")
    receivedBy: Literal["listener", "import"] = Field(
        description="How its newest record came: a syslog or NetFlow listener, or an import (/api/import, _bulk, seclake import).")
    describes: list[str] = Field(
        description="What its newest record says it is: observer vendor and product, ECS event.module and "
                    "event.dataset, the Windows provider, the syslog program.")
    records: int = Field(description="Records the lake holds.")
    lastSeen: int | None = Field(description="Epoch milliseconds: the newest record's @timestamp.")
    eventsPerMinute: float = Field(description="Records per minute over the last recentMinutes (by event time).")
    parseErrors: int = Field(description="Records no parser understood, kept raw (the line in @message, @fields empty).")


class SourcesReply(Closed):
    entries: list[CollectorEntry] = Field(description="One per listener, in the clients' collector model.")
    listeners: list[ListenerRow] = Field(description="One per listener of this node.")
    sources: list[SourceRow] = Field(description="One per sending address of a listener, since the start.")
    inventory: list[InventoryRow] = Field(
        description="One per source whose records the lake holds (what the caller may see), newest first: "
                    "true after a restart and in cluster mode.")
    recentMinutes: int = Field(description="The window eventsPerMinute is counted over.")
    shards: dict[str, Any] | None = Field(
        None, alias="_shards", description="Present when some splits gave no answer: the counts are partial.")
    incomplete: str | None = Field(None, description="Why the counts may miss records: the node is not ready yet.")


class CatalogSource(Closed):
    source: str = Field(description="The source (@source).")
    records: int = Field(description="Matching records of the source.")


class CatalogField(Closed):
    name: str = Field(description="The name a query uses (user.name for @fields.user.name).")
    path: str = Field(description="The path in the record (_source).")
    type: Literal["keyword", "text", "ip", "number", "date"] = Field(description="keyword, text, ip, number or date.")
    records: int = Field(description="Matching records that hold the field.")
    sources: dict[str, int] = Field(description="Per source (@source): records that hold the field.")
    examples: list[str] = Field(description="Up to 3 values seen in the newest records.")


class CatalogReply(Open):
    dataType: Literal["event", "flow"] = Field(description="The dataset: event or flow.")
    total: int = Field(description="Matching records.")
    sources: list[CatalogSource] = Field(description="Sources with their record counts, most first.")
    otherSourcesRecords: int = Field(description="Records of sources beyond those listed.")
    truncated: bool = Field(description="More fields than the 1000 listed.")
    fields: list[CatalogField] = Field(description="The fields, most common first.")


# -- analytics (docs/analytics.md) ----------------------------------------------------------------


class QueryColumn(Closed):
    name: str = Field(description="The column's name: an aggregation's or BY expression's name or text, a field.")
    type: Literal["keyword", "long", "double", "boolean", "date", "ip", "null"] = Field(
        description="ES|QL's type of the column's values.")


class QueryReply(Open):
    """ds/query: ES|QL's answer."""

    columns: list[QueryColumn] = Field(description="The columns, in order.")
    values: list[list[Any]] = Field(description="One list per row, in the columns' order.")
    took: int = Field(description="Milliseconds the query took on the server.")
    warnings: list[str] | None = Field(None, description="What the answer left out, and why (the implicit LIMIT's cut).")


class QueryProgress(Closed):
    read: int = Field(description="Records read so far.")
    total: int | None = Field(description="Records the search before the first pipe matches, once counted.")


class QueryTaskReply(Open):
    """A query task (ds/query_async, ds/query_async_get, ds/query_async_cancel)."""

    id: str = Field(description="The task's id.")
    state: Literal["queued", "running", "done", "failed", "cancelled"] = Field(description="Where the task is.")
    is_running: bool = Field(description="queued or running: poll again.")
    query: str = Field(description="The query submitted.")
    submittedOn: int = Field(description="Epoch milliseconds.")
    took: int | None = Field(description="Milliseconds it ran (so far); null while queued.")
    progress: QueryProgress = Field(description="Records read of those matching.")
    expiresOn: int | None = Field(description="Epoch milliseconds the task is forgotten at, once finished.")
    error: str | None = Field(None, description="failed, cancelled: why.")
    columns: list[QueryColumn] | None = Field(None, description="done: as ds/query answers.")
    values: list[list[Any]] | None = Field(None, description="done: as ds/query answers.")
    warnings: list[str] | None = Field(None, description="done: as ds/query answers.")
