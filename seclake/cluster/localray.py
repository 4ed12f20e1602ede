"""A Ray cluster of separate processes on this machine: a head and worker nodes on 127.0.0.1.

For the benchmark's cluster stage and the cluster tests (a real cluster,
not Ray's in-process simulation). Each node is ``ray start --block`` in its
own session (process group), so that stopping it ends exactly the
processes that node started (its raylet, its workers, the actors placed on
it) and nothing else on the machine. Each worker node carries a custom
resource ``node_<name>`` so callers can pin a searcher to each node.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


BIN = Path(sys.executable).parent
# One CPU and a small object store per node: searches move little data
# through Ray, and the machine is shared.
COMMON = ["--num-cpus", "1", "--object-store-memory", "100000000", "--disable-usage-stats",
          "--node-ip-address", "127.0.0.1"]
# Ray's fixed default ports (the dashboard agent's 52365...) would collide
# between nodes on one machine: every node gets its own.
PORT_OPTIONS = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
                "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A throwaway cluster on 127.0.0.1 without tokens. Ray turns token
# authentication on by itself when ~/.ray/auth_token exists (any local
# ``ray.init()`` on the machine writes one): nodes and drivers then disagree,
# and drivers fail with "InvalidAuthToken" (a CI run broke so). Said explicitly.
AUTH_MODE = "disabled"


def ray_env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SECLAKE_") and not k.startswith("RAY_")}
    e["RAY_USAGE_STATS_ENABLED"] = "0"
    e["RAY_AUTH_MODE"] = AUTH_MODE
    return e


def session_pids(sid: int) -> list[int]:
    """Processes of session ``sid`` (Linux /proc): Ray workers make their own process groups."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:  # state ppid pgrp session
            out.append(int(entry))
    return out


class LocalRayCluster:
    def __init__(self, workers: tuple[str, ...] = ("b", "c"), log_dir: Path | None = None):
        # Short: Ray puts unix sockets under it (108-byte path limit).
        self.temp = Path(tempfile.mkdtemp(prefix="slray-", dir="/tmp"))
        self.log_dir = log_dir if log_dir is not None else self.temp
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.workers = workers
        self.procs: dict[str, subprocess.Popen] = {}

    def _start(self, name: str, args: list[str]) -> None:
        ports: list[str] = []
        for option in PORT_OPTIONS:
            ports += [option, str(free_port())]
        with (self.log_dir / f"ray-{name}.log").open("ab") as log:
            self.procs[name] = subprocess.Popen(
                [str(BIN / "ray"), "start", "--block", *args, *ports, "--resources", f'{{"node_{name}": 1}}', *COMMON],
                stdout=log, stderr=subprocess.STDOUT, env=ray_env(), start_new_session=True,
            )

    def start(self, timeout: float = 180) -> dict[str, str]:
        """Start the head, then each worker node; node name -> Ray node id."""
        # This process joins as a driver (``nodes``): the same mode as the nodes.
        os.environ["RAY_AUTH_MODE"] = AUTH_MODE
        self._start("head", ["--head", "--port", str(self.port), "--include-dashboard=false",
                             "--temp-dir", str(self.temp / "t")])
        self._wait_nodes(1, timeout)
        for i, w in enumerate(self.workers):
            # A raylet that does not register within Ray's fixed 30 s (a loaded
            # machine) makes `ray start` exit: retried once.
            for attempt in (1, 2):
                self._start(w, ["--address", self.address])
                try:
                    self._wait_nodes(2 + i, timeout)
                    break
                except RuntimeError:
                    if attempt == 2 or self.procs[w].poll() is None:
                        raise
                    self.procs.pop(w)
        return self.nodes()

    def _check_alive(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"ray node {name} exited with {p.returncode}:\n{self.log(name)}")

    def log(self, name: str) -> str:
        """The end of a node's log (errors quote it: the temp dir goes at stop)."""
        try:
            return (self.log_dir / f"ray-{name}.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def nodes(self) -> dict[str, str]:
        """Node name -> Ray node id of the live nodes (this process asks as a Ray driver)."""
        import ray

        from seclake.cluster.placement import connect

        connect(self.address)
        out = {}
        for n in ray.nodes():
            if n.get("Alive"):
                for res in n.get("Resources", {}):
                    if res.startswith("node_"):
                        out[res[len("node_"):]] = n["NodeID"]
        return out

    def _wait_nodes(self, count: int, timeout: float) -> None:
        import ray

        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            try:
                if len(self.nodes()) >= count:
                    return
            except Exception:  # noqa: BLE001 - right after the head listens its raylet may not be up yet
                ray.shutdown()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{count} ray nodes did not join within {timeout}s; see {self.log_dir}")
            time.sleep(0.5)

    def disconnect(self) -> None:
        """Leave the cluster as a driver (the benchmark only needed the node ids)."""
        import ray

        if ray.is_initialized():
            ray.shutdown()

    def stop(self) -> None:
        self.disconnect()
        for name in reversed(list(self.procs)):
            self._signal(name, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for name, p in self.procs.items():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            self._signal(name, signal.SIGKILL)
            p.wait(10)
        shutil.rmtree(self.temp, ignore_errors=True)

    def _signal(self, name: str, sig: int) -> None:
        for pid in session_pids(self.procs[name].pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

