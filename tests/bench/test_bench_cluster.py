"""The benchmark's cluster stage on tiny data: cluster mode beside embedded on the same lake.

A real local Ray cluster (head + 2 worker nodes, separate processes on
127.0.0.1) is started by ``seclake bench --cluster``'s stage; skipped when
Ray is not installed, failed under CI=true (CI installs the cluster extra).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seclake.bench.classes import CLASSES
from seclake.bench.runner import BenchFailed, BenchOptions, run
from tests.cluster.raycluster import NEEDS_RAY

pytestmark = NEEDS_RAY


def bench_ray_processes() -> list[str]:
    """Command lines of live processes of a benchmark Ray cluster (its temp dir is /tmp/slbench-*)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "/tmp/slbench-" in cmd:
                out.append(cmd)
    return out


def test_cluster_stage_reports_cluster_mode_beside_embedded_with_agreeing_answers(tmp_path, monkeypatch):
    out, results = tmp_path / "benchmarks.md", tmp_path / "tiny.json"
    # Only the cluster stage is looked at: no ingest scaling, no baseline, no cold runs of embedded
    # mode (a restart per class: half of the run), few pairs, a short wait for the last merges.
    monkeypatch.setenv("SECLAKE_MERGE_QUIET_SECONDS", "3")
    opts = BenchOptions(events=10_000, days=30, reps=5, load_seconds=2, clients=4, arrival_seconds=0, out=out, results=results,
                        data_dir=tmp_path / "data", cli_ingest=False, peers=False, cluster=True, cold=False, pairs=4,
                        parse_lines=0, scaling_events=None, baseline=None, sigma=None)
    try:
        r = run(opts, echo=lambda s: None)
    except BenchFailed as e:  # a disagreement is a failure of cluster mode or of the harness: show it
        pytest.fail(str(e) + "\n" + (results.read_text() if results.exists() else "")[-5000:])
    c = r["cluster"]
    # Every class, timed on both nodes with 1 and with 2 searchers, every answer equal to embedded mode's.
    assert c["agreement"]["ok"], c["agreement"]["mismatches"][:5]
    assert c["agreement"]["checks"] >= len(CLASSES) * 2 * (1 + 5)
    for qc in CLASSES:
        for engine in ("http", "cluster-1", "cluster-2"):
            t = c["queries"][qc.name][engine]
            assert t["n"] >= 5 and t["median"] > 0
    # The fan-out each class pays for: 30 days touch at least the splits 7 days do; summaries none.
    assert c["splits"]["Q8"] >= c["splits"]["Q1"] > 0 and c["splits"]["SUMM"] == 0
    for name in ("embedded", "cluster-1", "cluster-2"):
        assert c["load"][name]["errors"] == 0 and c["load"][name]["requests"] > 0
        assert c["load"][name]["import"] is None  # searches only, and labelled so
    text = out.read_text()
    assert "## Cluster mode beside embedded mode" in text
    assert "| Q4 |" in text.split("## Cluster mode")[1]
    assert "all agree" in text and "cluster, 2 searchers" in text and "on this one" in text
    # Every Ray process the stage started is gone.
    assert bench_ray_processes() == []
