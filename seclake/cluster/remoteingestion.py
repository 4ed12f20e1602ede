"""A read-only API node's imports: parsed and validated here, stored by the ingest node's ingestor.

The same ``Ingestion`` as on the ingest node reads the body, so a bad
request gets the same error on every node and costs the ingest node
nothing; only the durable step differs: the parsed batch goes over Ray to
the ``Ingestor`` actor (``cluster/ingestor.py``), and the reply waits for
its acknowledgement, which comes after the ingest node's fsync.

When no ingest node is running, or it does not answer, the import fails
with ``Unavailable`` (503) saying what is missing and whether anything may
have been stored; never a silent drop.

An import with an idempotency key sends the key (scope, key, digest of the
request, reply) with the records: the ingest node, the one writer, decides
whether it is new, a replay, a reuse or in flight (``service/idempotency.py``),
so two API nodes given the same retry cannot both store it, and a retry
after a lost answer is safe.
"""

from __future__ import annotations

from typing import Any

from seclake.cluster import INGESTOR, NAMESPACE
from seclake.errors import Conflict, Unavailable
from seclake.service.idempotency import HEADER, Stored
from seclake.service.ingestion import Ingestion
from seclake.service.parsepool import ParsePool

# Beyond the ingestor's own deadline: time for its answer to travel back.
ANSWER_GRACE_SECONDS = 30.0


class RemoteIngestion(Ingestion):
    def __init__(self, namespace: str = NAMESPACE, timeout: float = 60.0, parsers: ParsePool | None = None):
        super().__init__(lake=None, detector=None, parsers=parsers)
        self.namespace = namespace
        self.timeout = timeout

    def _append(
        self, items: list[tuple[str, dict[str, Any]]], key: dict[str, Any] | None = None, prepared: Any = None,
    ) -> tuple[int | None, int | None]:
        # ``prepared`` is unused here: the records travel as objects, the ingest node logs and runs the rules.
        assert key is None  # keyed batches go through _append_once, decided on the ingest node
        if not items:
            return None, None
        return tuple(self._forward(items, None))  # type: ignore[return-value]

    def _append_once(self, items: list[tuple[str, dict[str, Any]]], request: dict[str, Any], prepared: Any = None) -> Stored:
        # Sent even with no records: the ingest node remembers the key (or answers its earlier reply).
        return Stored(*self._forward(items, request))

    def _forward(self, items: list, request: dict[str, Any] | None) -> Any:
        """The ingestor's answer to a batch: (first, last), or with ``request`` a ``Stored`` as a tuple."""
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        try:
            # Looked up on every import: a name that is gone means no ingest
            # node now, and nothing was sent.
            handle = ray.get_actor(INGESTOR, namespace=self.namespace)
        except ValueError:
            raise Unavailable(
                f"no ingest node is running (no Ray actor {INGESTOR!r} in namespace {self.namespace!r}): "
                "start the API node that owns the lake (ingest = true); nothing was stored"
            ) from None
        try:
            status, value = ray.get(
                handle.append.remote(items, self.timeout, request), timeout=self.timeout + ANSWER_GRACE_SECONDS
            )
        except RayActorError as e:
            raise Unavailable(
                "the ingest node went away before acknowledging the import; records it had already "
                f"logged are kept, so importing again may store some twice ({type(e).__name__})"
                + _retry_advice(request)
            ) from None
        except GetTimeoutError:
            raise Unavailable(
                f"the ingest node did not acknowledge the import within {self.timeout + ANSWER_GRACE_SECONDS:g} s; "
                "it may still store it, so importing again may store it twice" + _retry_advice(request)
            ) from None
        if status == "ok":
            return value
        if status == "fault":
            raise RuntimeError(value)
        raise value

    def append_behaviors(self, behaviors: list[dict[str, Any]]) -> tuple[int | None, int | None]:
        raise Conflict("behaviors are appended on the ingest node (ingest = true), not on a read-only API node")


def _retry_advice(request: dict[str, Any] | None) -> str:
    if request is None:
        return f" (send an {HEADER} header to make retries safe)"
    return f"; with the same {HEADER} a retry stores it at most once"
