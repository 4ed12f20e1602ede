"""Errors that must reach the caller as themselves across a process boundary.

seclake's errors take their own constructor arguments, which pickle does not
replay, so a searcher sends (module, class, message, attributes) instead and
the root rebuilds the same error: a query past a limit is a 400 in cluster
mode as in embedded mode, not a failed split.
"""

from __future__ import annotations

import importlib
from typing import Any

from seclake.errors import SeclakeError


def pack(error: SeclakeError) -> tuple[str, str, str, dict[str, Any]]:
    cls = type(error)
    return (cls.__module__, cls.__qualname__, error.message, dict(vars(error)))


def unpack(packed: tuple[str, str, str, dict[str, Any]]) -> SeclakeError:
    module, qualname, message, attrs = packed
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and issubclass(cls, SeclakeError)):
        return SeclakeError(message)
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(attrs)
    error.message = message
    return error
