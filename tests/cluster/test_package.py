"""The cluster package's promise: a Ray call made while not connected fails; it never starts a Ray cluster."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cluster.raycluster import HAVE_RAY

pytestmark = pytest.mark.skipif(not HAVE_RAY, reason='Ray is not installed: pip install -e ".[cluster]"')

# A thread of a node that stopped, still asking Ray for an actor.
LATE_CALL = """
import seclake.cluster.ingestor
import ray
try:
    ray.get_actor("ingestor", namespace="seclake")
except Exception as e:
    print("refused:", type(e).__name__, e)
print("initialized:", ray.is_initialized())
"""


def test_a_ray_call_while_not_connected_fails_instead_of_starting_a_cluster(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(tmp_path)  # where Ray would write ~/.ray/auth_token
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", LATE_CALL], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "initialized: False" in done.stdout, done.stdout + done.stderr
    # Ray's default would have started a local cluster and left its token behind.
    assert not (tmp_path / ".ray").exists()
