"""The tests' real Ray cluster: seclake.cluster.localray (a head and worker
nodes as separate processes on 127.0.0.1), and the environment the tests
start seclake processes with."""

from __future__ import annotations

from seclake.cluster.localray import BIN, LocalRayCluster, free_port, ray_env

__all__ = ["BIN", "LocalRayCluster", "env", "free_port"]


def env() -> dict[str, str]:
    e = ray_env()
    e["PYTHONUNBUFFERED"] = "1"  # seclake processes' logs, read by the tests as they come
    return e
