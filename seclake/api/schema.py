"""The wire shape of every call, as pydantic models, and the OpenAPI document made from them.

One request model (what ``kargs`` holds) and one reply model (what
``response`` holds) per call, shaped as the clients of this interface send
and read them (spec/http-interface.md, spec/client-compat.md). The document
is served at ``/api/openapi.json`` and drawn by the web interface's
reference page (``/reference``). ``tests/api/test_schema.py`` checks that
every registered call has its models, that the document is valid OpenAPI
3.1, and that the answers of a real server validate against the reply
models, so the document cannot drift from what is sent.

The calls still check their own arguments (every message names its field);
these models describe them. Records whose fields vary with the data
(events, flows, rules) allow members beyond those named.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class Open(BaseModel):
    """A record that may hold members beyond those named."""

    model_config = ConfigDict(extra="allow")


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- search options (spec 2.4, 2.5) ---------------------------------------------------


class FacetEntry(Open):
    field: str
    size: int | None = Field(None, description="Most buckets; default 10.")
    order: Literal["count", "desc", "_count"] | None = None
    title: str | None = None


class FilterEntry(Open):
    field: str
    terms: list[str | int | float | bool]


class DateFacet(Open):
    name: str | None = Field(None, description="The aggregations member it is answered under; default dateHistogram.")
    key: str | None = Field(None, description="The date field, @timestamp.")
    interval: str | None = Field(None, description="minute, hour, day, week, month or a duration like 1.5h.")


class Facets(Open):
    facets: list[FacetEntry] | None = None
    mustFilters: list[FilterEntry] | None = None
    mustNotFilters: list[FilterEntry] | None = None
    dateFacets: list[DateFacet] | None = None


class SearchOptions(Open):
    searchStr: str | None = Field(None, description="Lucene query (docs/query-semantics.md); empty matches all.")
    range_from: int | None = Field(None, description="Epoch milliseconds.")
    range_to: int | None = Field(None, description="Epoch milliseconds.")
    range_field: str | None = None
    fetchOffset: int | None = None
    fetchLimit: int | None = None
    sortField: str | None = None
    sortOrder: Literal["asc", "desc", "ASC", "DESC"] | None = None
    dateFacetField: str | None = None
    dataType: Literal["event", "flow"] | None = None
    facets: Facets | None = None


class SearchRequest(Open):
    options: SearchOptions


class EventSearchRequest(Open):
    partition: Literal["default"] = "default"
    dataType: Literal["event", "flow"] | None = None
    options: SearchOptions


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


class Preference(Open):
    timezone: dict[str, Any]


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


class TokenList(Open):
    entries: list[TokenRecord]
    tokens: list[TokenRecord] = Field(description="The same list under seclake's earlier name.")


class PolicyRecord(Open):
    name: str
    description: str
    filters: dict[str, str]
    createdOn: str | None
    updatedOn: str | None


class RoleRecord(Open):
    name: str
    description: str
    builtIn: bool
    permissions: list[str]
    APIPolicies: list[str]
    dataPolicies: list[str]
    createdOn: str | None
    updatedOn: str | None


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
    connections: int = Field(description="TCP/TLS connections open now.")
    faults: dict[str, int] = Field(description="Refused connections, failed TLS handshakes, bad frames, timeouts...")


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


class CatalogOptions(Open):
    searchStr: str | None = Field(None, description="Only records this Lucene query matches.")
    range_from: int | None = Field(None, description="Epoch milliseconds.")
    range_to: int | None = Field(None, description="Epoch milliseconds.")
    range_field: str | None = None
    sources: int | None = Field(None, description="Most sources counted apart, 1-50; default 20.")


class CatalogRequest(Open):
    dataType: Literal["event", "flow"] | None = None
    options: CatalogOptions | None = None


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


# -- requests of the other calls ------------------------------------------------------------------


class Empty(Open):
    """No arguments: ``kargs: {}``."""


class LoginRequest(Open):
    username: str
    password: str


class UserRequest(Open):
    user: dict[str, Any] = Field(description="A user record (the clients' model: no password, oauthProvider...).")


class UsernameRequest(Open):
    username: str


class TokenEntry(Open):
    name: str | None = None
    description: str | None = None
    roles: list[str] | None = None
    dataPolicies: list[str] | None = None
    APIPolicies: list[str] | None = None


class TokenArgs(Open):
    id: str | int | None = Field(None, description="delete: a token's id or its name.")
    entry: TokenEntry | None = None


class TokenRequest(Open):
    action: Literal["add", "list", "delete"]
    args: TokenArgs | None = Field(None, description="The clients' form.")
    name: str | None = None
    description: str | None = None
    username: str | None = None
    roles: list[str] | None = None
    expiresInDays: float | None = None
    dataPolicies: list[str] | None = None
    APIPolicies: list[str] | None = None
    id: int | str | None = Field(None, description="delete: the token's id (seclake's form).")


class PolicyRequest(Open):
    policy: dict[str, Any]


class RoleRequest(Open):
    role: dict[str, Any]


class NameRequest(Open):
    name: str


class IncidentUpdateRequest(Closed):
    id: str
    status: Literal["new", "acknowledged", "resolved"] | None = None
    comment: str | None = None
    incident: bool | None = None
    scoreAdjust: int | None = None


class RuleDaoRequest(Open):
    action: Literal["list", "get", "add", "update", "toggle", "delete"]
    bucket: dict[str, Any] | None = Field(None, description="A rule (docs/rules.md).")
    name: str | None = None
    enabled: bool | None = None
    args: dict[str, Any] | None = Field(None, description="The clients' form: {id: name} or {entry: rule}.")


class RuleTestRequest(Closed):
    bucket: dict[str, Any] = Field(description="A rule, or {name} of a stored one.")
    input: str | dict[str, Any] = Field(description="A log line or a record.")


# Each call: (request model, reply model, one line on what it does).
CALLS: dict[str, tuple[type[BaseModel], Any, str]] = {
    "auth/login": (LoginRequest, SessionRecord, "Sign in; the session token goes in Servicetoken."),
    "auth/logout": (Empty, dict[str, bool], "End the session of the token sent."),
    "auth/userList": (Empty, dict[str, list[UserRecord]], "Every user, as {users}."),
    "auth/getUser": (UsernameRequest, dict[str, UserRecord], "One user, as {user}."),
    "auth/userAdd": (UserRequest, UserRecord, "Add a user; without a password it cannot sign in with one."),
    "auth/userUpdate": (UserRequest, UserRecord, "Change some fields of user.username."),
    "auth/userDelete": (UsernameRequest, dict[str, str], "Delete a user."),
    "auth/userUnlock": (UsernameRequest, dict[str, Any], "End a username's login lockouts."),
    "auth/api_token": (TokenRequest, TokenRecord | TokenList, "API tokens: add (shown once), list, delete."),
    "auth/dataPolicyList": (Empty, dict[str, list[PolicyRecord]], "Data policies, as {policies}."),
    "auth/dataPolicyAdd": (PolicyRequest, PolicyRecord, "Add a data policy."),
    "auth/dataPolicyUpdate": (PolicyRequest, PolicyRecord, "Change a data policy."),
    "auth/dataPolicyDelete": (NameRequest, dict[str, str], "Delete a data policy not in use."),
    "auth/roleList": (Empty, dict[str, list[RoleRecord]], "Roles, built-in and custom, as {roles}."),
    "auth/roleAdd": (RoleRequest, RoleRecord, "Add a custom role."),
    "auth/roleUpdate": (RoleRequest, RoleRecord, "Change a custom role."),
    "auth/roleDelete": (NameRequest, dict[str, str], "Delete a custom role not in use."),
    "ds/get_index_zoom_histogram_lv3": (EventSearchRequest, EventSearchReply, "Search events or flows."),
    "ds/behavior_summary_search": (SearchRequest, HitWrapper, "Search daily behavior summaries."),
    "ds/behavior_incident_update": (IncidentUpdateRequest, Summary, "Triage a summary."),
    "ds/fsm_behavior_search": (SearchRequest, HitWrapper, "Search behaviors (the timeline)."),
    "ds/audit_search": (SearchRequest, HitWrapper, "Search the audit log."),
    "ds/eventwatch_bucket_search": (SearchRequest, RuleSearchReply, "Search behavior rules."),
    "ds/eventwatch_bucket_dao": (RuleDaoRequest, dict[str, Any], "List, get, add, update, toggle, delete rules."),
    "ds/eventwatch_rule_test": (RuleTestRequest, dict[str, Any], "What one rule makes of one event; nothing stored."),
    "ds/field_catalog": (CatalogRequest, CatalogReply,
                         "The fields records hold, per source: name, type, records holding it, examples."),
    "ds/collector_list": (Empty, SourcesReply, "The syslog listeners of this node and what each sending address sent."),
}

# Raw routes: their body is not a JSON envelope.
RAW = {
    "import/{vendor}": (ImportReport, "Import raw logs (text or gzip): lines of JSON, syslog, CEF or key=value."),
}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every call."""
    schemas: dict[str, Any] = {}

    def ref(model: Any) -> dict[str, Any]:
        schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        return schema

    error = {"type": "object", "required": ["verdict"], "properties": {
        "verdict": {"enum": ["ERROR", "EXCEPTION"]}, "error": {"type": "string"}, "exception": {"type": "string"}}}
    status_header = {"X-Seclake-Status": {
        "description": "The HTTP status an error stands for (errors are sent with 200 unless http_error_status).",
        "schema": {"type": "integer"}}}
    paths: dict[str, Any] = {}
    for name, (request, reply, summary) in sorted(CALLS.items()):
        body = {"type": "object", "required": ["kargs"], "properties": {"kargs": ref(request)}}
        ok = {"type": "object", "required": ["verdict", "response"],
              "properties": {"verdict": {"const": "OK"}, "response": ref(reply)}}
        paths[f"/api/{name}"] = {"post": {
            "operationId": name.replace("/", "_"),
            "summary": summary,
            "tags": [name.split("/")[0]],
            "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
            "responses": {"200": {
                "description": "verdict OK with the response, or verdict ERROR/EXCEPTION with the message",
                "headers": status_header,
                "content": {"application/json": {"schema": {"oneOf": [ok, error]}}},
            }},
            "security": [] if name == "auth/login" else [{"servicetoken": []}, {"bearer": []}],
        }}
    for pattern, (reply, summary) in RAW.items():
        paths[f"/api/{pattern}"] = {"post": {
            "operationId": "import",
            "summary": summary,
            "tags": ["import"],
            "parameters": [
                {"name": "vendor", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "type", "in": "query", "schema": {"enum": ["event", "flow"]}},
                {"name": "format", "in": "query", "schema": {"enum": ["auto", "jsonl", "syslog", "cef", "kv"]}},
                {"name": "customer", "in": "query", "schema": {"type": "string"}},
                {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}},
            ],
            "requestBody": {"required": True, "content": {"text/plain": {"schema": {"type": "string"}},
                                                          "application/gzip": {"schema": {"type": "string"}}}},
            "responses": {"200": {
                "description": "the import's report, or an ERROR",
                "headers": status_header,
                "content": {"application/json": {"schema": {"oneOf": [
                    {"type": "object", "properties": {"verdict": {"const": "OK"}, "response": ref(reply)}}, error]}}},
            }},
            "security": [{"servicetoken": []}, {"bearer": []}],
        }}
    return {
        "openapi": "3.1.0",
        "info": {"title": "seclake", "version": "1", "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
                 "description": "Every call is a POST of {kargs} answered {verdict, response}."},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "servicetoken": {"type": "apiKey", "in": "header", "name": "Servicetoken"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
    }
