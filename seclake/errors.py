"""The one error tree of seclake.

Every error the service raises on purpose is a ``SeclakeError``. Each class
carries a stable ``code``; ``seclake.api`` maps codes to the wire (verdict and
HTTP status) in one place, so nothing below the API knows about HTTP.

    SeclakeError                  code
    ├── BadRequest                bad_request        (400)
    │   ├── QueryError            query_syntax       (400)  carries position
    │   ├── LimitExceeded         limit_exceeded     (400)  names the limit
    │   └── ValidationFailed      invalid            (400)  names the field
    ├── Unauthorized              unauthorized       (401)
    ├── Forbidden                 forbidden          (403)
    ├── NotFound                  not_found          (404)
    ├── MethodNotAllowed          method_not_allowed (405)
    ├── Conflict                  conflict           (409)
    ├── PayloadTooLarge           too_large          (413)
    ├── UnsupportedMediaType      unsupported_media  (415)
    ├── Unprocessable             unprocessable      (422)  well-formed, but contradicts an earlier request
    ├── TooManyAttempts           too_many_attempts  (429)
    ├── Unavailable               unavailable        (503)  a part the call needs is not reachable
    └── InsufficientStorage       insufficient_storage (507) the disk (log or database) is full

Anything else that escapes a call is an unexpected fault: the API answers
``EXCEPTION`` with a short message and logs the trace.
"""

from __future__ import annotations


class SeclakeError(Exception):
    code = "error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        # Pickled as what it is, not re-made from ``args``: most subclasses
        # take other arguments than their message (``ValidationFailed(field,
        # problem)``), and an error raised in a worker process (``service/parsepool.py``)
        # must reach the caller with its type, message and fields.
        return _rebuilt, (type(self), self.args, self.__dict__)


class BadRequest(SeclakeError):
    code = "bad_request"


class QueryError(BadRequest):
    """A query that does not parse or names an unknown construct.

    ``position`` is the 0-based character offset in the query string where
    the problem was found, or None when it concerns the query as a whole.
    """

    code = "query_syntax"

    def __init__(self, message: str, position: int | None = None, expected: str | None = None):
        where = f" at position {position}" if position is not None else ""
        exp = f"; expected {expected}" if expected else ""
        super().__init__(f"query error{where}: {message}{exp}")
        self.position = position
        self.expected = expected


class LimitExceeded(BadRequest):
    """A request past a configured limit; the message names limit and value."""

    code = "limit_exceeded"

    def __init__(self, limit: str, value: object, maximum: object):
        super().__init__(f"{limit} is {value}, above the limit of {maximum}")
        self.limit = limit
        self.value = value
        self.maximum = maximum


class ValidationFailed(BadRequest):
    """A request field of the wrong type or value; ``field`` says where."""

    code = "invalid"

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field


class Unauthorized(SeclakeError):
    code = "unauthorized"


class Forbidden(SeclakeError):
    code = "forbidden"


class NotFound(SeclakeError):
    code = "not_found"


class MethodNotAllowed(SeclakeError):
    code = "method_not_allowed"


class Conflict(SeclakeError):
    code = "conflict"


class Unprocessable(SeclakeError):
    """A well-formed request that contradicts an earlier one (an idempotency key reused for another import)."""

    code = "unprocessable"


class PayloadTooLarge(SeclakeError):
    code = "too_large"


class UnsupportedMediaType(SeclakeError):
    code = "unsupported_media"


class TooManyAttempts(SeclakeError):
    code = "too_many_attempts"

    def __init__(self, message: str, retry_after_seconds: int | None = None):
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class Unavailable(SeclakeError):
    """A part of the deployment the call needs is not reachable (cluster mode: the ingest node)."""

    code = "unavailable"


class SearchTimeout(SeclakeError):
    """A search ran past its deadline and was stopped: no partial answer."""

    code = "timeout"


class InsufficientStorage(SeclakeError):
    """The disk the log or the database writes to is full (or over quota):
    nothing of the request was stored, and it may be sent again once there is room."""

    code = "insufficient_storage"


def disk_full(error: BaseException) -> bool:
    """Whether ``error``, or what caused it, is a full disk: ENOSPC/EDQUOT from
    a write, or the database saying so (SQLite "database or disk is full",
    PostgreSQL's DiskFull)."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (28, 122):  # ENOSPC, EDQUOT
            return True
        text = str(e).lower()
        if "disk is full" in text or "no space left on device" in text or type(e).__name__ == "DiskFull":
            return True
        e = e.__cause__ or e.__context__
    return False


def _rebuilt(cls: type[SeclakeError], args: tuple, state: dict) -> SeclakeError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error
