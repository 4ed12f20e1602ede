"""A read-only API node's imports: parsed and validated here, stored by the ingest node's ingestor.

The same ``Ingestion`` as on the ingest node reads the body, so a bad
request gets the same error on every node and costs the ingest node
nothing; only the durable step differs: the parsed batch goes over Ray to
the ``Ingestor`` actor (``cluster/ingestor.py``), and the reply waits for
its acknowledgement, which comes after the ingest node's fsync.

When no ingest node is running, or it does not answer, the import fails
with ``Unavailable`` (503) saying what is missing and whether anything may
have been stored; never a silent drop.
"""

from __future__ import annotations

from typing import Any

from seclake.cluster import INGESTOR, NAMESPACE
from seclake.cluster.transport import unpack
from seclake.errors import Conflict, Unavailable
from seclake.service.ingestion import Ingestion

# Beyond the ingestor's own deadline: time for its answer to travel back.
ANSWER_GRACE_SECONDS = 30.0


class RemoteIngestion(Ingestion):
    def __init__(self, namespace: str = NAMESPACE, timeout: float = 60.0):
        super().__init__(lake=None, detector=None)
        self.namespace = namespace
        self.timeout = timeout

    def _append(self, items: list[tuple[str, dict[str, Any]]]) -> tuple[int | None, int | None]:
        if not items:
            return None, None
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
            status, value = ray.get(handle.append.remote(items, self.timeout), timeout=self.timeout + ANSWER_GRACE_SECONDS)
        except RayActorError as e:
            raise Unavailable(
                "the ingest node went away before acknowledging the import; records it had already "
                f"logged are kept, so importing again may store some twice ({type(e).__name__})"
            ) from None
        except GetTimeoutError:
            raise Unavailable(
                f"the ingest node did not acknowledge the import within {self.timeout + ANSWER_GRACE_SECONDS:g} s; "
                "it may still store it, so importing again may store it twice"
            ) from None
        if status == "ok":
            return tuple(value)
        if status == "fault":
            raise RuntimeError(value)
        raise unpack(value)

    def append_behaviors(self, behaviors: list[dict[str, Any]]) -> tuple[int | None, int | None]:
        raise Conflict("behaviors are appended on the ingest node (ingest = true), not on a read-only API node")
