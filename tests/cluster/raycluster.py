"""The tests' real Ray cluster: seclake.cluster.localray (a head and worker
nodes as separate processes on 127.0.0.1), and the environment the tests
start seclake processes with."""

from __future__ import annotations

import os

import pytest

from seclake.cluster.localray import BIN, LocalRayCluster, free_port, ray_env

__all__ = ["BIN", "HAVE_RAY", "LocalRayCluster", "NEEDS_RAY", "env", "free_port"]

try:
    import ray  # noqa: F401

    HAVE_RAY = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_RAY = False
    if os.environ.get("CI") == "true":
        raise RuntimeError('Ray is not installed: CI runs the cluster tests (pip install -e ".[cluster]")') from None

# The marks of every test module that starts a real Ray cluster: skipped
# without Ray on a developer's machine, a failure under CI=true (above).
NEEDS_RAY = [
    pytest.mark.cluster,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not HAVE_RAY, reason='Ray is not installed: pip install -e ".[cluster]" to run the cluster tests'),
]


def env() -> dict[str, str]:
    e = ray_env()
    e["PYTHONUNBUFFERED"] = "1"  # seclake processes' logs, read by the tests as they come
    return e
