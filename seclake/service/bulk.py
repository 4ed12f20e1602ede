"""Reading an Elasticsearch bulk body (``api/elastic.py``) into records: what does not depend on the sender.

Each action becomes an ``Entry``: its action, index and id as sent, and
either the record its document parses to (with its dataset) or the error
its item answers. Whether the sender may store the record (its data
policies), the log and the rules come after, in ``api/elastic.py`` and
``service/ingestion.py``. Being stateless, reading can run in a parse
worker (``service/parsepool.py``) as well as in the request thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from seclake.errors import ValidationFailed
from seclake.ingest.parser import parse_line
from seclake.ingest.reader import iter_lines
from seclake.ingest.record import LineRejected
from seclake.ingest.vendor import validate_vendor

FLOW_PREFIXES = ("flows-", "flow-")
MAX_ERROR = 300


class Entry(NamedTuple):
    """One action of a bulk body: a record to store (``dataset``, ``record``) or the item's ``error``."""

    action: str
    index: Any
    doc_id: Any
    number: int  # the line of its document (or of the action, when it has none)
    dataset: str | None = None
    record: Any = None  # the record; in a parse worker's answer, its position among the records
    error: dict[str, str] | None = None


def problem(kind: str, reason: str) -> dict[str, str]:
    """An item's error object, as Elasticsearch writes it."""
    return {"type": kind, "reason": reason[:MAX_ERROR]}


def target_of(index: str) -> tuple[str, str]:
    """(vendor, dataset) of an index name (``api/elastic.py``'s module doc);
    ``ValidationFailed("index", ...)`` naming it when it names no vendor."""
    for prefix in FLOW_PREFIXES:
        if index.startswith(prefix):
            # "flows-" alone once became events of vendor "flows-": a sender's
            # template missing its variable, whose flows nobody would find.
            return _vendor_of(index, index[len(prefix):], f"flows go to '{prefix}<vendor>'"), "flow"
    return _vendor_of(index, index, "events go to an index named as their vendor"), "event"


def _vendor_of(index: str, vendor: str, rule: str) -> str:
    try:
        return validate_vendor(vendor)
    except ValidationFailed as e:
        why = "no vendor after the prefix" if not vendor else e.message.removeprefix("vendor: ")
        raise ValidationFailed("index", f"{index[:80]!r}: {why} ({rule})") from None


def _document(text: str) -> str:
    """ECS ``message`` as the record's ``@message`` when it has none."""
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text  # the parser keeps it as a raw event, as an import would
    if isinstance(doc, dict) and "@message" not in doc and isinstance(doc.get("message"), str):
        doc["@message"] = doc.pop("message")
        return orjson.dumps(doc).decode()
    return text


def bulk_items(body: bytes, default_index: str | None, *, compressed: bool | str | None, max_bytes: int):
    """(action, meta, document text or None, its line number) of each action in an NDJSON body."""
    lines = iter_lines(body, compressed=compressed, max_bytes=max_bytes)
    for number, text, _truncated in lines:
        try:
            action_line = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise ValidationFailed(f"line {number}", "expected an action ({\"index\": {...}}), not JSON") from None
        if not isinstance(action_line, dict) or len(action_line) != 1:
            raise ValidationFailed(f"line {number}", "an action line is one object with one key: index, create, update or delete")
        action, meta = next(iter(action_line.items()))
        if not isinstance(meta, dict):
            raise ValidationFailed(f"line {number}", f"the {action!r} action's metadata must be an object")
        meta = {**({"_index": default_index} if default_index else {}), **meta}
        document, at = None, number
        if action != "delete":
            following = next(lines, None)
            if following is None:
                raise ValidationFailed(f"line {number}", f"the {action!r} action has no document line after it")
            document, at = following.text, following.number
        yield action, meta, document, at


def read_bulk(body: bytes, default_index: str | None, *, compressed: bool | str | None, max_bytes: int,
              received_ms: int) -> Iterator[Entry]:
    """Each action of ``body``, its document parsed (an error of the body as a whole raises)."""
    for action, meta, document, number in bulk_items(body, default_index, compressed=compressed, max_bytes=max_bytes):
        index, doc_id = meta.get("_index"), meta.get("_id")
        if action not in ("index", "create"):
            yield Entry(action, index, doc_id, number, error=problem(
                "illegal_argument_exception", f"seclake keeps records immutable: {action!r} is not supported, only index and create"))
            continue
        if not isinstance(index, str) or not index:
            yield Entry(action, index, doc_id, number, error=problem(
                "action_request_validation_exception", f"line {number}: no index: name it in the action or the URL"))
            continue
        try:
            vendor, dataset = target_of(index)
        except ValidationFailed as e:
            yield Entry(action, index, doc_id, number, error=problem("invalid_index_name_exception", f"line {number}: {e.message}"))
            continue
        try:
            parsed = parse_line(_document(document or ""), vendor=vendor, dataset=dataset, fmt="jsonl",
                                received_ms=received_ms)
        except (LineRejected, ValidationFailed) as e:
            yield Entry(action, index, doc_id, number, error=problem("document_parsing_exception", f"line {number}: {e.message}"))
            continue
        if parsed is None:
            yield Entry(action, index, doc_id, number, error=problem("document_parsing_exception", f"line {number}: empty document"))
            continue
        yield Entry(action, index, doc_id, number, dataset, parsed[0])
