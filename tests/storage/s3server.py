"""A local S3 stand-in for tests: moto's S3 server on 127.0.0.1.

No real object storage is reachable where the tests run, so the split store
is tested against moto's ``ThreadedMotoServer`` (package ``moto[server]``),
which speaks the S3 HTTP protocol (PUT/GET/LIST/DELETE with signed
requests) in a thread of the test process. It checks the protocol, not S3's
consistency or performance.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

ACCESS_KEY_ID = "test-access-key"
SECRET_ACCESS_KEY = "test-secret-key"
REGION = "us-east-1"


@dataclass
class S3StandIn:
    endpoint: str

    def bucket(self) -> str:
        """Create a new empty bucket and return its name."""
        name = f"seclake-{secrets.token_hex(4)}"
        r = httpx.put(f"{self.endpoint}/{name}")
        r.raise_for_status()
        return name

    def settings(self, bucket: str, prefix: str = "lake") -> dict[str, str]:
        """The seclake settings that point at ``bucket`` on this server."""
        return {
            "split_store_url": f"s3://{bucket}/{prefix}",
            "split_store_endpoint": self.endpoint,
            "split_store_region": REGION,
            "split_store_access_key_id": ACCESS_KEY_ID,
            "split_store_secret_access_key": SECRET_ACCESS_KEY,
        }

    def config(self, bucket: str, prefix: str = "lake"):
        from seclake.storage.splitstore import StoreConfig

        return StoreConfig(
            url=f"s3://{bucket}/{prefix}",
            endpoint=self.endpoint,
            region=REGION,
            access_key_id=ACCESS_KEY_ID,
            secret_access_key=SECRET_ACCESS_KEY,
        )


@contextmanager
def s3_stand_in() -> Iterator[S3StandIn]:
    """Start moto's S3 server on a free 127.0.0.1 port; stopped on exit."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield S3StandIn(f"http://{host}:{port}")
    finally:
        server.stop()
