"""Where a stage's CPU goes: the server's process, its parse, build and merge workers, the bench's own clients.

The ingest target is a rate on a machine whose cores are all busy, so what
decides it is the CPU each event costs, and in which process: the server's
one interpreter (parsing, rules, the log) caps the rate at one core's worth
however many cores there are, the split builders spread over them. The
figures come from ``/proc/<pid>/stat`` (utime + stime) of the server and of
its children, told apart by the names they give themselves
(``seclake/workers.py``) or else their niceness (merge workers run at a
lower priority, ``storage/builder.py``), and from this process's own usage for
the clients that send the requests. Linux only, as the rest of the bench.

A worker that starts during the stage counts from zero; one that ends
during it is not counted (the server's workers live as long as it does).
"""

from __future__ import annotations

import os
import resource
import time
from typing import Any

SERVER, PARSE, BUILD, MERGE, CLIENT = "server", "parse workers", "build workers", "merge workers", "bench client"
ROLES = (SERVER, PARSE, BUILD, MERGE, CLIENT)
# Workers name themselves (``seclake/workers.py``); one that does not is told by its niceness.
_NAMED = {"seclake-parse": PARSE, "seclake-build": BUILD, "seclake-merge": MERGE}
_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[str, int, int, float] | None:
    """(name, parent pid, niceness, CPU seconds) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, tail = f.read().rsplit(")", 1)
        fields = tail.split()
    except (OSError, ValueError):
        return None
    # pid (name) state ppid ...: after the name, utime(11) stime(12) ... nice(16).
    return head.split("(", 1)[-1], int(fields[1]), int(fields[16]), (int(fields[11]) + int(fields[12])) / _TICK


def own_cpu() -> float:
    """CPU seconds this process has used, every thread of it."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def loop_seconds(rounds: int = 5) -> float:
    """Seconds one core takes for a fixed loop of plain Python (2M additions), best of ``rounds``:
    how fast this machine ran when the run started. The same code's figures moved 2-3x between
    sessions of this shared machine; absolute figures of two runs (ms per request, a run's
    minutes) compare only as far as theirs do."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        total = 0
        for i in range(2_000_000):
            total += i
        best = min(best, time.perf_counter() - started)
    return best


class CpuMeter:
    """CPU seconds by role of the process tree of ``server_pid`` and of this process, from now on."""

    def __init__(self, server_pid: int):
        self.server_pid = server_pid
        self._wall = time.monotonic()
        self._before = self._tree()
        self._own = own_cpu()

    def _tree(self) -> dict[int, tuple[str, float]]:
        tree: dict[int, tuple[str, float]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            stat = _stat(pid)
            if stat is None:
                continue
            name, parent, nice, seconds = stat
            if pid == self.server_pid:
                tree[pid] = (SERVER, seconds)
            elif parent == self.server_pid:
                tree[pid] = (_NAMED.get(name) or (MERGE if nice > 0 else BUILD), seconds)
        return tree

    def seconds(self) -> dict[str, float]:
        """CPU seconds of each role since the meter started."""
        out = dict.fromkeys(ROLES, 0.0)
        for pid, (role, seconds) in self._tree().items():
            out[role] += seconds - self._before.get(pid, (role, 0.0))[1]
        out[CLIENT] = own_cpu() - self._own
        return out

    def per_line(self, lines: int) -> dict[str, Any]:
        """µs of CPU per line by role, in all, and how busy the machine's cores were meanwhile."""
        wall = time.monotonic() - self._wall
        seconds = self.seconds()
        total = sum(seconds.values())
        return {
            "us_per_line": {role: s / lines * 1e6 for role, s in seconds.items()},
            "total_us_per_line": total / lines * 1e6,
            "wall_seconds": wall,
            "busy": total / (wall * (os.cpu_count() or 1)) if wall else None,
        }
