"""Split formats side by side: the same records in splits of format 1 and 2.

    python -m seclake.bench.formats --events 200000 --rounds 7

The demo lines of the benchmark are parsed once and grouped per dataset and
UTC day as ``bench.splitbuild`` groups them (one split each, as a settled
lake holds them); every group is
written as a split of each format the engine reads (``split.write_split``'s
``version``). Then every bundle and histogram class of the benchmark runs
through ``build_plan`` and ``Root.search`` on both, formats interleaved
round by round, and their answers are compared whole: totals, pages,
facets and histograms. Printed: bytes per record of each format and the
median time of every class, with the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from seclake.api.options import build_plan
from seclake.bench.classes import CLASSES
from seclake.bench.engines import requests_of
from seclake.bench.ingest import du_bytes
from seclake.bench.splitbuild import payload
from seclake.record.dataset import DATASETS
from seclake.search.root import Root
from seclake.settings import load_settings
from seclake.storage.split import READABLE_FORMATS, Split, StoredRecord, write_split


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)

    data = payload(events=args.events, days=args.days)  # (dataset, records) per dataset and UTC day
    n = sum(len(p) for _, p in data)
    raw = sum(len(b) for _, p in data for _, b in p)
    with tempfile.TemporaryDirectory(prefix="seclake-formats-") as tmp, ThreadPoolExecutor(4) as pool:
        return _compare(data, Path(tmp), pool, n, raw, args.rounds)


def _compare(data, base: Path, pool: ThreadPoolExecutor, n: int, raw: int, rounds: int) -> int:
    """Write ``data`` in every format under ``base``, then time and compare the answers."""
    roots = {}
    for version in READABLE_FORMATS:
        splits = []
        started = time.perf_counter()
        for i, (dataset, records) in enumerate(data):
            # Split ids differ by format: compiled queries are kept per split id.
            dest = base / f"v{version}" / f"v{version}-{i}"
            dest.parent.mkdir(parents=True, exist_ok=True)
            stored = (StoredRecord(d, orjson.loads(b), b) for d, b in records)
            write_split(stored, DATASETS[dataset], dest, dest.name, version=version)
            splits.append(Split(dest).open())
        size = du_bytes(base / f"v{version}")
        print(f"format {version}: {n:,} records in {len(splits)} splits, {size / n:.0f} bytes per record "
              f"({size / raw:.2f}x their JSON), written in {time.perf_counter() - started:.0f} s", flush=True)

        def splits_for(dataset, lo=None, hi=None, splits=splits):
            return sorted((s for s in splits if s.meta.dataset == dataset
                           and (lo is None or s.meta.time_max >= lo) and (hi is None or s.meta.time_min <= hi)),
                          key=lambda s: (s.meta.time_min, s.meta.split_id))
        roots[version] = (Root(splits_for, pool), splits_for)
    settings = load_settings(data_dir=base)
    events = DATASETS["event"]
    classes = [qc for qc in CLASSES if qc.kind in ("bundle", "histogram")]
    times: dict[tuple[str, int], list[float]] = defaultdict(list)
    differ = []
    for r in range(rounds + 1):  # round 0 warms up
        for qc in classes:
            answers = {}
            for version in (READABLE_FORMATS if r % 2 else READABLE_FORMATS[::-1]):
                root, splits_for = roots[version]
                metas = [s.meta for s in splits_for("event")]
                bounds = (min(m.time_min for m in metas), max(m.time_max for m in metas))
                started = time.perf_counter()
                out = []
                for _offset, opts in requests_of(qc):
                    plan, _ = build_plan(opts, events, settings, data_bounds=bounds)
                    res = root.search(plan)
                    out.append((res.total, [h.docid for h in res.hits], repr(sorted(res.facets.items())),
                                repr(res.histograms)))
                if r:
                    times[(qc.name, version)].append(time.perf_counter() - started)
                answers[version] = out
            if len({repr(a) for a in answers.values()}) > 1:
                differ.append(qc.name)
    print("\n| class | " + " | ".join(f"format {v} ms" for v in READABLE_FORMATS) + " | newest / oldest |")
    print("|---|" + "---:|" * (len(READABLE_FORMATS) + 1))
    for qc in classes:
        medians = [statistics.median(times[(qc.name, v)]) * 1e3 for v in READABLE_FORMATS]
        print(f"| {qc.name} | " + " | ".join(f"{m:.2f}" for m in medians) + f" | {medians[-1] / medians[0]:.2f} |")
    print("\nanswers: " + ("the same in every format" if not differ else "DIFFERENT in " + ", ".join(sorted(set(differ)))))
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
