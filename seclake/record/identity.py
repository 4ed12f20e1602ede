"""Record ids: the write-ahead log sequence (``docId``) and its string form (``_id``).

The sequence is assigned once, when a record is accepted, and survives
merges and restarts, so both ids are stable. ``_id`` is the sequence as 16
hex digits: it sorts like the number, and stays a JSON-safe integer as docId.
"""

from __future__ import annotations

import re

_ID = re.compile(r"^[0-9a-f]{16}$")


def record_id(docid: int) -> str:
    return f"{docid:016x}"


def parse_record_id(text: str) -> int | None:
    """The docId of an ``_id``, or None when the text is not one."""
    if not isinstance(text, str) or not _ID.match(text):
        return None
    return int(text, 16)
