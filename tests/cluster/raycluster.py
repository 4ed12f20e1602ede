"""A real Ray cluster on 127.0.0.1 for the tests: a head and worker nodes as separate processes.

Each node is ``ray start --block`` in its own session (process group), so
that stopping it ends that node's processes and nothing else. Nodes get a
custom resource named after them so the tests can tell them apart; CPUs and
object store are kept small for a loaded 2-core machine.
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
COMMON = ["--num-cpus", "1", "--object-store-memory", "100000000", "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SECLAKE_") and not k.startswith("RAY_")}
    e["RAY_USAGE_STATS_ENABLED"] = "0"
    e["PYTHONUNBUFFERED"] = "1"
    return e


def session_pids(sid: int) -> list[int]:
    """Processes of the session ``sid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid:  # state ppid pgrp session
            out.append(int(entry))
    return out


class LocalRayCluster:
    def __init__(self, workers: tuple[str, ...] = ("b", "c")):
        # Short: Ray puts unix sockets under it (108-byte path limit).
        self.temp = Path(tempfile.mkdtemp(prefix="slray-", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.workers = workers
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}

    def _start(self, name: str, args: list[str]) -> None:
        log = self.temp / f"{name}.log"
        self.logs[name] = log
        # Every node on this machine gets its own ports: Ray's fixed defaults
        # (the dashboard agent's 52365...) would collide between nodes.
        ports = []
        for option in (
            "--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
            "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port",
        ):
            ports += [option, str(free_port())]
        self.procs[name] = subprocess.Popen(
            [str(BIN / "ray"), "start", "--block", *args, *ports, "--resources", f'{{"node_{name}": 1}}', *COMMON],
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            env=env(),
            start_new_session=True,
        )

    def start(self, timeout: float = 180) -> None:
        self._start(
            "head",
            ["--head", "--port", str(self.port), "--include-dashboard=false", "--temp-dir", str(self.temp / "t")],
        )
        self._wait_port(timeout)
        self.wait_nodes(1, timeout)
        # One node at a time, each retried once: a raylet that does not
        # register within Ray's fixed 30 s (a loaded machine) makes `ray start` exit.
        for i, w in enumerate(self.workers):
            for attempt in (1, 2):
                self._start(w, ["--address", self.address])
                try:
                    self.wait_nodes(2 + i, timeout)
                    break
                except RuntimeError:
                    if attempt == 2 or self.procs[w].poll() is None:
                        raise
                    self.procs.pop(w)

    def _wait_port(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"ray head did not listen on {self.address}:\n{self.log('head')}")

    def _check_alive(self) -> None:
        for name, p in list(self.procs.items()):
            if p.poll() is not None:
                raise RuntimeError(f"ray node {name} exited with {p.returncode}:\n{self.log(name)}")

    def _signal(self, name: str, sig: int) -> None:
        # Ray's workers make their own process groups but stay in the node's
        # session: signal every process of that session.
        for pid in session_pids(self.procs[name].pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def log(self, name: str) -> str:
        try:
            return self.logs[name].read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def nodes(self) -> dict[str, str]:
        """node name -> Ray node id of the live nodes (asks the cluster as a driver)."""
        import ray

        out = {}
        for n in ray.nodes():
            if not n.get("Alive"):
                continue
            for res in n.get("Resources", {}):
                if res.startswith("node_"):
                    out[res[len("node_"):]] = n["NodeID"]
        return out

    def wait_nodes(self, count: int, timeout: float) -> None:
        import ray

        from seclake.cluster.searcher import connect

        deadline = time.monotonic() + timeout
        while True:
            # Right after the head listens its raylet may not be up yet.
            try:
                connect(self.address)
                break
            except Exception:
                ray.shutdown()
                self._check_alive()
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        while len(self.nodes()) < count:
            self._check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {self.nodes()} of {count} ray nodes joined")
            time.sleep(0.5)

    def stop(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        # Each node's session holds only the processes that node started.
        for name in reversed(list(self.procs)):
            self._signal(name, signal.SIGTERM)
        deadline = time.monotonic() + 3
        for name, p in self.procs.items():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            self._signal(name, signal.SIGKILL)
            p.wait(10)
        shutil.rmtree(self.temp, ignore_errors=True)
