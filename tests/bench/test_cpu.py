"""The bench's CPU meter: a server's own CPU, its workers' by niceness, and the bench's, told apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from seclake.bench.cpu import BUILD, CLIENT, MERGE, SERVER, CpuMeter

# Burns ``seconds`` of CPU (not wall time: the machine may be busy), says so, then waits.
BURN = "import os, sys, time\n{nice}t = time.process_time()\nwhile time.process_time() - t < {seconds}: pass\nprint('burnt', flush=True)\ntime.sleep(60)\n"

# A stand-in server process: a merge worker (niced), a build worker, and its own work.
MERGE_WORKER = BURN.format(nice="os.nice(10)\n", seconds=0.8)
BUILD_WORKER = BURN.format(nice="", seconds=0.4)
SERVER_SCRIPT = (
    "import subprocess, sys\n"
    f"subprocess.Popen([sys.executable, '-c', {MERGE_WORKER!r}])\n"
    f"subprocess.Popen([sys.executable, '-c', {BUILD_WORKER!r}])\n"
    + BURN.format(nice="", seconds=0.2)
)


def test_the_cpu_of_a_server_and_of_its_build_and_merge_workers_is_told_apart():
    server = subprocess.Popen([sys.executable, "-c", SERVER_SCRIPT], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        meter = CpuMeter(server.pid)
        for _ in range(3):  # the server and both workers have burnt theirs
            assert server.stdout.readline().strip() == "burnt"
        spent = meter.seconds()
        per_line = meter.per_line(1000)
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    # Each role's burn, plus a Python start (~0.1 s of CPU; ~0.3 s on a machine busy with
    # other tests) at most; the server's own start may come before the meter's first look.
    assert 0.15 <= spent[SERVER] < 0.7, spent
    assert 0.8 <= spent[MERGE] < 1.4, spent
    assert 0.4 <= spent[BUILD] < 1.0, spent
    assert spent[CLIENT] < 0.2, spent  # this process only waited
    assert per_line["us_per_line"][MERGE] == spent[MERGE] / 1000 * 1e6
    assert 0 < per_line["busy"] <= 1.05
