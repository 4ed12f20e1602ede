"""How the server's log lines look: text for people, JSON lines for log pipelines.

Setting ``log_format``: ``text`` (the default) or ``json``. In JSON every
line is one object: ``time``, ``level``, ``logger``, ``message``, and, for
lines written while a call runs, ``request_id``, ``call``, ``client`` and
``caller`` (from ``REQUEST``, set by the dispatcher). Each call also writes
one ``seclake.access`` line with its ``outcome``, ``status`` and
``duration_ms``. Hand-written (a few lines over orjson) because the fields
are ours and come from a context variable, which is all a JSON logging
library would add here.
"""

from __future__ import annotations

import contextvars
import logging
from datetime import datetime, timezone
from typing import Any

import orjson

# The call being answered, for every line written on its behalf (threads included:
# Starlette runs calls in worker threads with a copy of the context).
REQUEST: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("seclake_request", default=None)

ACCESS = logging.getLogger("seclake.access")

# Attributes every LogRecord has: anything else was passed as ``extra`` and is kept.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = REQUEST.get()
        if request:
            line.update(request)
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure(level: str, fmt: str) -> None:
    """Set up the root logger once, at server start."""
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        # uvicorn writes a text access line per request already.
        ACCESS.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
