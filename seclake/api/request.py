"""The request of every call, as pydantic models: what ``kargs`` must be.

Each call names its request model where it is registered (``api/calls/``);
the dispatcher reads ``kargs`` into it before the call runs, so a call gets
typed arguments, and a request that does not fit gets an ERROR naming the
field and what to send (``kargs.options.facets.facets[3].size: must be at
least 1, not 0``, ``seclake.model``). Shapes are those the clients of this
interface send (spec/http-interface.md, spec/client-compat.md), older
seclake forms beside them.

The records a call changes are the services' own models (``UserInput``,
``PolicyInput``, ``RoleInput``, ``TokenInput``, ``Triage``): defined once,
taken the same way by the CLI. What depends on the server's settings
(``max_fetch_limit``, ``max_query_length``, the password policy) is checked
by the code that knows them; what needs the database (that a role exists)
in the transaction that stores it. Rules are checked by
``detect/rule.py``, the one reader of rules from requests and files alike.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from seclake.model import Closed, Flag, Open, Text, Whole
from seclake.service.policies import Name, PolicyInput, RoleInput
from seclake.service.tokens import TokenInput, TokenReference
from seclake.service.users import Username, UserInput

# A field name, a sort key, a facet title.
MAX_NAME = 256
FieldName = Annotated[Text, Field(max_length=MAX_NAME)]
DataType = Literal["event", "flow"]


def _scalar(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise PydanticCustomError("term", "must be a finite number")
    if not isinstance(value, str | int | float | bool):
        raise PydanticCustomError("term", "must be a string, number or boolean, not {kind}",
                                  {"kind": type(value).__name__.replace("dict", "object").replace("NoneType", "null")})
    return value


def _address(value: Any) -> Any:
    # Written as the server writes a peer's address, so it finds the counters.
    if not isinstance(value, str):
        raise PydanticCustomError("address", "must be an IP address as a string, such as 192.0.2.7")
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        raise PydanticCustomError("address", "must be an IP address such as 192.0.2.7 or 2001:db8::7, "
                                  "not {value}", {"value": repr(value[:64])}) from None


# A client's IP address.
Address = Annotated[str, BeforeValidator(_address)]


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


# -- search options (spec 2.4, 2.5) ---------------------------------------------------


class FacetEntry(Open):
    field: Annotated[FieldName, Field(min_length=1, description="The field to count values of.")]
    size: Annotated[Whole, Field(ge=1)] | None = Field(None, description="Most buckets; default 10.")
    order: Literal["count", "desc", "_count"] | None = Field(
        None, description="count (most common first), the only order.")
    title: Text | None = Field(None, description="Display label.")


class FilterEntry(Open):
    field: FieldName = Field(description="The field the condition is on.")
    terms: list[Annotated[Any, BeforeValidator(_scalar)]] = Field(
        description="Values any of which the field equals (strings, numbers, booleans).")


class DateFacet(Open):
    name: FieldName | None = Field(None, description="The aggregations member it is answered under; default dateHistogram.")
    key: FieldName | None = Field(None, description="The date field, @timestamp.")
    interval: Text | None = Field(None, description="minute, hour, day, week, month or a duration like 1.5h.")


class Facets(Open):
    facets: list[FacetEntry] | None = Field(None, description="The fields to count values of; may be empty.")
    mustFilters: list[FilterEntry] | None = Field(None, description="Conditions hits must meet.")
    mustNotFilters: list[FilterEntry] | None = Field(None, description="Hits meeting a condition are excluded.")
    dateFacets: list[DateFacet] | None = Field(None, description="Histograms over time.")


class SearchOptions(Open):
    searchStr: Text | None = Field(None, description="Lucene query (docs/query-semantics.md); empty matches all.")
    range_from: Whole | None = Field(None, description="Epoch milliseconds.")
    range_to: Whole | None = Field(None, description="Epoch milliseconds.")
    range_field: FieldName | None = Field(
        None, description="The field the range applies to: @timestamp for events, from for summaries, timestamp for behaviors.")
    fetchOffset: Annotated[Whole, Field(ge=0)] | None = Field(None, description="Paging offset.")
    fetchLimit: Annotated[Whole, Field(ge=0)] | None = Field(None, description="Number of hits to return.")
    sortField: FieldName | None = Field(None, description="Event search: @timestamp. Summary search: to.")
    sortOrder: Annotated[Literal["asc", "desc"], BeforeValidator(_lower)] | None = Field(
        None, description="asc or desc, in any case.")
    dateFacetField: FieldName | None = Field(
        None, description="Event search: the date field of the histogram, @timestamp.")
    dataType: DataType | None = Field(None, description="event, or flow for flow search.")
    facets: Facets | None = Field(None, description="Facets and filters (spec 2.5); may be empty.")


class SearchRequest(Open):
    options: SearchOptions | None = Field(None, description="The search options (spec 2.4).")


class EventSearchRequest(Open):
    partition: Literal["default"] = Field("default", description="Always default.")
    dataType: DataType | None = Field(None, description="event, or flow for flow search.")
    options: SearchOptions | None = Field(None, description="The search options (spec 2.4).")


class CatalogOptions(Open):
    searchStr: Text | None = Field(None, description="Only records this Lucene query matches.")
    range_from: Whole | None = Field(None, description="Epoch milliseconds.")
    range_to: Whole | None = Field(None, description="Epoch milliseconds.")
    range_field: FieldName | None = Field(None, description="The field the range applies to (@timestamp).")
    dataType: DataType | None = Field(None, description="event or flow (also in kargs).")
    sources: Annotated[Whole, Field(ge=1, le=50)] = Field(20, description="Most sources counted apart, 1-50.")


class CatalogRequest(Open):
    dataType: DataType | None = Field(None, description="event or flow; event when not given.")
    options: CatalogOptions | None = Field(None, description="The query, range and number of sources.")


# -- requests of the other calls ------------------------------------------------------------------


class Empty(Open):
    """No arguments: ``kargs: {}``."""


class NoArguments(Closed):
    """No arguments, and nothing else either: ``kargs: {}``."""


class LoginRequest(Open):
    username: Annotated[Text, Field(min_length=1, max_length=128)] = Field(description="The user name.")
    password: Annotated[Text, Field(max_length=1024)] = Field(description="The password.")


class UserRequest(Open):
    user: UserInput = Field(description="The user's fields; on update only those sent change.")


class UsernameRequest(Open):
    username: Username = Field(description="The user's name.")


class TokenArgs(Open):
    id: TokenReference | None = Field(None, description="delete: a token's id or its name.")
    entry: TokenInput | None = Field(None, description="add: the token's fields (the clients' form).")


class TokenRequest(TokenInput):
    """``add`` takes the token's fields at the top (seclake's form) or in
    ``args.entry`` (the clients'); ``delete`` an ``id`` (seclake's, a number)
    or ``args.id``/``args.entry.name`` (the clients': an id or a name)."""

    action: Literal["add", "list", "delete"] = Field(description="add, list or delete.")
    args: TokenArgs | None = Field(None, description="The clients' form.")
    id: TokenReference | None = Field(None, description="delete: the token's id (seclake's form).")
    revoked: Flag = Field(False, description="list: deleted (revoked) tokens too, shown with state revoked.")


class SsoSessionRequest(Open):
    code: Annotated[Text, Field(min_length=1, max_length=200, description="The one-time code of the callback's #sso= fragment.")]


class AddressRequest(Open):
    address: Address = Field(description="A client address, as lockout messages and the audit show it.")


class PolicyRequest(Closed):
    policy: PolicyInput = Field(description="The data policy; on update filters are replaced whole.")


class RoleRequest(Closed):
    role: RoleInput = Field(description="The role.")


class NameRequest(Closed):
    name: Name = Field(description="The name of the one to delete.")


class RuleDaoRequest(Closed):
    """The clients' form ``{action, args: {id, entry}}`` means ``name`` and ``bucket``."""

    action: Literal["list", "get", "add", "update", "toggle", "delete"] = Field(
        description="list, get, add, update, toggle or delete.")
    bucket: dict[str, Any] | None = Field(None, description="A rule (docs/rules.md).")
    name: Text | None = Field(None, description="get, toggle, delete: the rule's name.")
    enabled: Flag | None = Field(None, description="toggle: enable (true) or disable (false).")
    names: Annotated[list[Text], Field(max_length=10_000)] | None = Field(
        None, description="toggle: the names of several rules, enabled or disabled together (one new version).")
    args: RuleArgs | None = Field(None, description="The clients' form: {id: name} or {entry: rule}.")
    sigma: Text | None = Field(None, description="add/update: a Sigma rule as YAML text (docs/detections.md), instead of bucket.")
    keyField: Text | None = Field(None, description="With sigma: key its behaviors by this field, not its log source's.")
    keyType: Text | None = Field(None, description="With sigma and keyField: the key's type.")


class RuleArgs(Open):
    id: Text | None = Field(None, description="A rule's name.")
    entry: dict[str, Any] | None = Field(None, description="A rule.")


def _line_or_record(value: Any) -> Any:
    if not isinstance(value, str | dict):
        raise PydanticCustomError("input", "must be a log line (string) or a record object")
    return value


class RuleTestRequest(Closed):
    bucket: dict[str, Any] | None = Field(None, description="A rule, or {name} of a stored one.")
    sigma: Text | None = Field(None, description="A Sigma rule as YAML text, instead of bucket.")
    input: Annotated[Any, BeforeValidator(_line_or_record)] = Field(description="A log line or a record.")


RuleDaoRequest.model_rebuild()


# -- analytics (docs/analytics.md) ----------------------------------------------------------------


class QueryRequest(Open):
    query: Annotated[Text, Field(description="A search (Lucene, may be empty), then ES|QL commands after pipes: "
                                             "`event.outcome:failure | STATS n = COUNT(*) BY user.name`.")]
    dataType: Literal["event", "flow", "behavior", "summary"] = Field("event", description="The dataset read.")
    range_from: Whole | None = Field(None, description="Start of the time range, epoch milliseconds.")
    range_to: Whole | None = Field(None, description="End of the time range, epoch milliseconds.")


class QueryTaskRequest(Open):
    id: Annotated[Text, Field(min_length=1, max_length=64, description="The task's id, as ds/query_async answered.")]
