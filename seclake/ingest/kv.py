"""key=value lines: ``a=1 b="two words" c='x' d=`` (FortiGate, iptables, auditd...).

Rules, kept small on purpose:

- A key starts a whitespace-separated token: a letter or ``_``, then letters,
  digits and ``_ . - @ / [ ]``. ``x=1`` inside another token is not a key.
- A value is a double- or single-quoted string (``\\"``, ``\\'`` and ``\\\\``
  unescape; other backslashes are kept, so ``"C:\\Windows"`` survives), or
  the run of non-space characters after ``=`` (possibly empty: ``OUT=``).
- Text between pairs (auditd's ``msg=audit(...):``, ``[UFW BLOCK]``) is
  ignored; the whole line stays in ``@message``.
- A repeated key keeps its last value.
- Values stay strings exactly as ingested. Queries compare numeric-looking
  strings as numbers (query-semantics.md), so ``dstport=443`` still matches
  ``dstport:443`` and ranges; keeping the text keeps ``007`` and
  ``1.10`` as written and makes every value's type predictable.

A line is taken as key=value when it has at least two pairs, or when it is a
single pair from its first character; one ``=`` in prose is not enough.
"""

from __future__ import annotations

import re

_PAIR = re.compile(
    r"(?<!\S)([A-Za-z_][\w.\-@/\[\]]*)="
    r"(?:\"([^\"\\]*(?:\\.[^\"\\]*)*)\"|'([^'\\]*(?:\\.[^'\\]*)*)'|(\S*))"
)
_ESCAPE = re.compile(r"\\([\\\"'])")


def parse(text: str) -> dict[str, str] | None:
    """The pairs of a key=value line, or None when the line does not look like one."""
    pairs = _PAIR.findall(text)
    if not pairs or (len(pairs) == 1 and not text.startswith(pairs[0][0] + "=")):
        return None
    fields: dict[str, str] = {}
    for key, dq, sq, bare in pairs:
        if bare:
            fields[key] = bare
        elif dq:
            fields[key] = _ESCAPE.sub(r"\1", dq) if "\\" in dq else dq
        elif sq:
            fields[key] = _ESCAPE.sub(r"\1", sq) if "\\" in sq else sq
        else:
            fields[key] = ""
    return fields
