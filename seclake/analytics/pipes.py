"""Where the search head of a piped query ends and its commands begin.

The head is a Lucene query string, whose own syntax uses ``|``: ``||`` is
OR, and a ``|`` may stand inside a phrase (``"a | b"``), a regular
expression (``/a|b/``), a range or parentheses, or inside a term
(luqum reads ``a|b`` as one term). So the pipe that starts the commands is
the first single ``|`` outside phrases, regexes and brackets that is
followed (after blanks) by a command keyword and then a blank or the end.
Phrases and regexes open where luqum opens them: at the start of a term
(after a blank, ``:``, a bracket or an operator), not inside one.

A hand-written scan, not a grammar: it must agree with luqum's tokens only
on where quotes, regexes and brackets open and close, and one pass over the
characters is linear whatever the text.
"""

from __future__ import annotations

COMMANDS = ("WHERE", "EVAL", "STATS", "SORT", "LIMIT", "KEEP", "DROP", "RENAME")
_OPEN = "([{"
_CLOSE = ")]}"
# After these a '"' or '/' opens a phrase or a regex (the start of a term).
_TERM_START = " \t\r\n\f\v:([{)]}+-!^~&|"


def first_pipe(text: str) -> int | None:
    """The offset of the ``|`` that starts the first command, or None."""
    i = 0
    n = len(text)
    depth = 0
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        at_term_start = i == 0 or text[i - 1] in _TERM_START
        if c == '"' and at_term_start:
            i = _skip_quoted(text, i, '"')
            continue
        if c == "/" and at_term_start:
            i = _skip_quoted(text, i, "/")
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif c == "|" and depth == 0:
            if i + 1 < n and text[i + 1] == "|":
                i += 2  # '||' is OR
                continue
            if (i == 0 or text[i - 1] != "|") and _command_follows(text, i + 1):
                return i
        i += 1
    return None


def _skip_quoted(text: str, start: int, quote: str) -> int:
    """The offset after the closing ``quote``; the end when it is not closed
    (luqum then reports the unclosed phrase or regex in the head)."""
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        i += 1
    return n


def _command_follows(text: str, i: int) -> bool:
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    j = i
    while j < n and (text[j].isalpha()):
        j += 1
    if text[i:j].upper() not in COMMANDS:
        return False
    return j == n or not (text[j].isalnum() or text[j] in "_@.`")
