"""Cluster mode's STATS: records to the API node (before) vs partial aggregates (after), measured.

Builds a lake of synthetic firewall events (a few senders, actions, source
addresses, byte counts over 4 days: several splits), starts a real Ray
cluster on 127.0.0.1 (a head and two worker nodes, ``localray``) with a
searcher on each worker node over the lake, and answers piped queries from
this process as a cluster API node does (``Root`` over ``RayLeaves``), both
ways side by side in one run:

* records: every matching record fetched from the searchers and folded here
  (``service.analytics.records`` + ``execute``: the path before partial aggregates);
* partials: the searchers fold their splits, the groups travel, merged here
  (``service.analytics._aggregated``).

Answers compared (equal). Time: wall time of each query, the two ways in
turns, the median of ``--rounds`` after one warm-up each. Bytes: the pickled
size of what the searchers answered (what Ray carries back; the requests are
small either way), counted in a separate pass so that pickling them again
does not weigh on the times.

    .venv/bin/python scripts/measure-cluster-aggregates.py [--records 60000] [--rounds 3]

The figures of docs/analytics.md ("Cluster mode") come from it.
"""

from __future__ import annotations

import argparse
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from seclake.analytics import execute, parse  # noqa: E402
from seclake.api.options import build_plan  # noqa: E402
from seclake.cluster.leaves import RayLeaves, SearcherDirectory  # noqa: E402
from seclake.cluster.localray import BIN, LocalRayCluster, ray_env  # noqa: E402
from seclake.db.database import Database  # noqa: E402
from seclake.record.dataset import EVENTS  # noqa: E402
from seclake.search.root import Root  # noqa: E402
from seclake.service.analytics import Progress, Selection, _aggregated, records  # noqa: E402
from seclake.service.metrics import Metrics  # noqa: E402
from seclake.settings import Settings  # noqa: E402
from seclake.storage.lake import Lake  # noqa: E402

DAY = 86_400_000
END = 1_793_491_200_000
QUERIES = (
    "| STATS n = COUNT(*) BY @sender",
    "| STATS n = COUNT(*), sources = COUNT_DISTINCT(@fields.srcip) BY @sender, @fields.action",
    "| STATS p95 = PERCENTILE(@fields.sentbyte, 95) BY @sender",  # every value travels: the worst case
)


def events(n: int) -> list[dict]:
    rng = random.Random(43)
    senders = [f"fw-{i}" for i in range(12)]
    out = []
    for i in range(n):
        out.append({"@timestamp": END - rng.randrange(4 * DAY), "@sender": rng.choice(senders),
                    "@message": f"connection {i} closed",
                    "@fields": {"action": rng.choice(["allow", "deny", "drop"]),
                                "srcip": f"10.{rng.randrange(4)}.{rng.randrange(256)}.{rng.randrange(256)}",
                                "dstip": f"192.168.{rng.randrange(8)}.{rng.randrange(256)}",
                                "sentbyte": rng.randrange(100_000), "proto": rng.choice([6, 17])}})
    return out


class CountingLeaves(RayLeaves):
    """RayLeaves that add up the pickled size of every searcher answer, by phase."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.bytes: dict[str, int] = {}

    def _submit(self, handle, method, *args) -> Future:
        out = super()._submit(handle, method, *args)

        def count(f: Future) -> None:
            if f.exception() is None:
                self.bytes[method] = self.bytes.get(method, 0) + len(pickle.dumps(f.result()))

        out.add_done_callback(count)
        return out


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--records", type=int, default=60_000)
    args.add_argument("--rounds", type=int, default=3)
    opts = args.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        db = Database(f"sqlite:///{base / 'meta.db'}")
        db.migrate()
        lake = Lake(base / "data", db)
        lake.start(background=False)
        docs = events(opts.records)
        for at in range(0, len(docs), 20_000):
            lake.append([("event", d) for d in docs[at:at + 20_000]])
            lake.flush()
        splits = lake.splits("event", None, None)
        print(f"{len(docs)} events in {len(splits)} splits", flush=True)
        rc = LocalRayCluster(("b", "c"))
        try:
            rc.start()
            nodes = rc.nodes()
            for w in ("b", "c"):
                subprocess.run([str(BIN / "seclake"), "searcher", "--ray-address", rc.address, "--data-dir",
                                str(base / "data"), "--node-id", nodes[w], "--indexers", "0", "--detach"],
                               env=ray_env(), check=True, capture_output=True, timeout=300)
            settings = Settings()

            def services(leaves):
                return SimpleNamespace(search=Root(lake.splits, leaves), settings=settings, metrics=Metrics())

            timed = services(RayLeaves(SearcherDirectory(refresh=0.5), timeout=600))
            for text in QUERIES:
                pipeline = parse(text)
                plan, _ = build_plan({"searchStr": pipeline.head, "fetchLimit": 0}, EVENTS, settings, now_ms=END)

                def by_records(svc):
                    rows = records(svc, Selection(EVENTS, plan), pipeline.fields, Progress(), max_records=10**8)
                    return execute(pipeline, rows, now=END)

                def by_partials(svc):
                    return _aggregated(svc, pipeline, Selection(EVENTS, plan), Progress(), END, 10**8)

                ways = {"records": by_records, "partials": by_partials}
                answers = {name: way(timed) for name, way in ways.items()}  # warm-up, and the answers compared
                assert answers["records"].values == answers["partials"].values and answers["records"].values
                took: dict[str, list[float]] = {name: [] for name in ways}
                for r in range(opts.rounds):
                    for name in (list(ways) if r % 2 == 0 else list(reversed(ways))):
                        started = time.perf_counter()
                        ways[name](timed)
                        took[name].append(time.perf_counter() - started)
                carried = {}
                for name, way in ways.items():
                    counting = CountingLeaves(SearcherDirectory(refresh=0.5), timeout=600)
                    way(services(counting))
                    carried[name] = counting.bytes
                print(f"\n{text}  ({len(answers['records'].values)} groups, equal answers)")
                for name in ways:
                    times = took[name]
                    print(f"  {name:9} median {statistics.median(times) * 1000:8.0f} ms  "
                          f"(rounds: {', '.join(f'{t * 1000:.0f}' for t in times)})  "
                          f"answers carried: {sum(carried[name].values()):>11,} bytes  {carried[name]}")
                ratio = statistics.median(took["records"]) / statistics.median(took["partials"])
                share = sum(carried["records"].values()) / max(1, sum(carried["partials"].values()))
                print(f"  records / partials: time {ratio:.1f}x, bytes {share:.0f}x", flush=True)
        finally:
            rc.stop()
            lake.stop()
            db.dispose()


if __name__ == "__main__":
    main()
