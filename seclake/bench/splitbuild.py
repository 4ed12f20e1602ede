"""Split building alone: records/s from encoded records to finished splits.

Ingest to searchable is bounded by how fast the builder process turns pending
records into splits (storage/builder.py), so that step gets a measurement of
its own, outside the full benchmark:

    python -m seclake.bench.splitbuild --events 100000 --days 3 --against HEAD~3

The demo lines are parsed through the real parsers once, numbered and encoded
as the lake keeps them pending, and grouped per dataset and UTC day as the
indexer groups them. Each round then runs ``builder._build`` (what the
worker process runs) over every group in a fresh process, for this tree and,
with ``--against REV``, for that git revision's tree (extracted with
``git archive``), rounds interleaved so both see the same machine load.
Timing the same payload in separate processes keeps each tree's caches and
allocator state to itself.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import orjson

from seclake.bench.data import DAY_MS, lines
from seclake.ingest.parser import parse_line

# Runs in a child process with the tree under test first on sys.path, set up
# as that tree's worker process is (its initializer, if it has one): it may
# only use what every tree has (builder._build and its arguments).
_CHILD = r"""
import inspect, json, os, pickle, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from seclake.storage import builder
start = getattr(builder, "_worker_start", None)
if start is not None:  # later trees pass the server's pid (the worker watches it)
    start(*([os.getppid()] if inspect.signature(start).parameters else []))
groups = pickle.loads(Path(sys.argv[2]).read_bytes())
out = Path(sys.argv[3])
started, cpu = time.perf_counter(), time.process_time()
n = 0
for i, (dataset, payload) in enumerate(groups):
    builder._build(dataset, payload, str(out / f"s{i}"), f"s{i}")
    n += len(payload)
print(json.dumps({"records": n, "seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu}))
"""


def payload(*, events: int, days: int) -> list[tuple[str, list[tuple[int, bytes]]]]:
    """(dataset, [(docId, record as JSON)]) per dataset and UTC day, as the indexer groups them."""
    groups: dict[tuple[str, int], list[tuple[int, bytes]]] = defaultdict(list)
    received = int(time.time() * 1000)
    seq = 0
    for line in lines(events=events, days=days):
        parsed = parse_line(line.line, vendor=line.vendor, dataset=line.dataset, received_ms=received,
                            customer=line.customer)
        if parsed is None:
            continue
        record, _understood = parsed
        seq += 1
        groups[(line.dataset, record["@timestamp"] // DAY_MS)].append((seq, orjson.dumps(record)))
    return [(dataset, items) for (dataset, _day), items in sorted(groups.items())]


def run_once(tree: Path, payload_file: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="splitbuild-") as out:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(payload_file), out],
                              check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def extract(rev: str, into: Path) -> Path:
    """The ``seclake`` package of a git revision, written under ``into``."""
    repo = Path(__file__).resolve().parents[2]
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "seclake"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--days", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", help="a git revision to time side by side with this tree")
    args = ap.parse_args(argv)

    here = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="splitbuild-") as tmp:
        tmpdir = Path(tmp)
        started = time.perf_counter()
        groups = payload(events=args.events, days=args.days)
        payload_file = tmpdir / "payload.pickle"
        payload_file.write_bytes(pickle.dumps(groups))
        n = sum(len(items) for _, items in groups)
        print(f"{n:,} records in {len(groups)} splits (prepared in {time.perf_counter() - started:.1f} s)")
        trees = {"this tree": here}
        if args.against:
            trees = {args.against: extract(args.against, Path(tempfile.mkdtemp(dir=tmpdir))), **trees}
        rates: dict[str, list[float]] = {name: [] for name in trees}
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        for r in range(args.rounds):
            for name, tree in trees.items():
                result = run_once(tree, payload_file)
                rate = result["records"] / result["seconds"]
                rates[name].append(rate)
                cpu[name].append(result["cpu"] / result["records"] * 1e6)
                print(f"round {r + 1} {name:>12}: {result['seconds']:6.2f} s, {rate:8,.0f} records/s, "
                      f"{cpu[name][-1]:.1f} CPU µs/record", flush=True)
        print()
        # CPU time counts both of the builder's busy threads (Python and
        # tantivy's indexer); on a shared machine it varies less than wall time.
        print("| tree | median records/s (wall) | wall µs/record | CPU µs/record (median) | rounds, records/s |")
        print("|---|---:|---:|---:|---|")
        for name, values in rates.items():
            med = statistics.median(values)
            print(f"| {name} | {med:,.0f} | {1e6 / med:.1f} | {statistics.median(cpu[name]):.1f} | "
                  f"{', '.join(f'{v:,.0f}' for v in values)} |")
        if args.against:
            base, new = (statistics.median(v) for v in rates.values())
            print(f"\nspeed-up: {new / base:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
