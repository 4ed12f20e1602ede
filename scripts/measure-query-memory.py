"""The server's memory per distinct pattern query (issue 39.6), measured.

Starts a real server (the tests' ``running_server``) on a fresh data dir,
loads the demo data through the ingestion path, then sends distinct
wildcard and regex searches over HTTP and prints the process's RSS growth
after 50, 100, 200, 350 and 500 of them (as is, and with the heap trimmed), with what each cache of compiled
queries says it holds. At the end the caches are emptied and the heap
trimmed, to tell memory the caches hold from memory the allocator kept.

    .venv/bin/python scripts/measure-query-memory.py [--days 7] [--queries 500]

The figures of docs/security.md ("A query's memory is bounded") come from it.
"""

from __future__ import annotations

import argparse
import gc
import random
import string
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from seclake.query import matcher, parser  # noqa: E402
from seclake.search import leaf  # noqa: E402
from seclake.service.demo import load_demo  # noqa: E402
from seclake.storage import memory  # noqa: E402
from tests.conftest import running_server  # noqa: E402

CALL = "ds/get_index_zoom_histogram_lv3"
MARKS = (50, 100, 200, 350, 500, 750, 1000)


def rss_mb() -> float:
    gc.collect()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def query_text(rng: random.Random, i: int) -> str:
    """A distinct query of the kinds a probe sends: leading wildcards, regexes, both."""
    word = "".join(rng.choice(string.ascii_lowercase) for _ in range(8))
    kind = i % 4
    if kind == 0:
        return f"*{word}*"
    if kind == 1:
        return f"/.*{word}.*/"
    if kind == 2:
        return f"@sender:*{word[:4]}* OR *{word[4:]}*"
    return f"user:adm{word}* AND /[a-z]+{word[:3]}[0-9]*/"


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--days", type=int, default=7)
    args.add_argument("--queries", type=int, default=500)
    args.add_argument("--compiled-mb", type=int, help="the compiled split queries' budget (default: the code's)")
    opts = args.parse_args()
    if opts.compiled_mb is not None:
        leaf.COMPILED_CACHE_BYTES = opts.compiled_mb << 20
        leaf._COMPILED = type(leaf._COMPILED)(maxsize=leaf.COMPILED_CACHE_BYTES, getsizeof=leaf._COMPILED.getsizeof)
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp)) as srv:
        started = time.monotonic()
        end_ms = int(time.time() * 1000)
        totals = load_demo(srv.services.ingestion, days=opts.days, end_ms=end_ms)
        lake = srv.services.lake
        lake.wait_indexed(lake.wal.next_seq - 1, timeout=300)
        time.sleep(35)  # the merger joins the quiet days' splits
        events = [s for s in lake.shelf.all() if s.meta.dataset == "event"]
        fields = sum(len(s.default_fields()) for s in events) / max(1, len(events))
        print(f"demo: {totals} in {time.monotonic() - started:.0f} s, event splits: {len(events)}, "
              f"{fields:.1f} default fields per split", flush=True)
        token = srv.login()
        opts_base = {"range_from": end_ms - opts.days * 86_400_000, "range_to": end_ms, "fetchLimit": 10,
                     "dateFacetField": "@timestamp"}

        def search(text: str) -> float:
            t = time.perf_counter()
            srv.call(CALL, {"partition": "default", "dataType": "event",
                            "options": {**opts_base, "searchStr": text}}, token)
            return time.perf_counter() - t

        rng = random.Random(39)
        for i in range(5):  # warm the search path (threads, arenas) first
            search(query_text(rng, i))
        time.sleep(30)  # merges done: their memory is not the searches'
        memory.release()
        base = rss_mb()
        print(f"baseline RSS {base:.0f} MB (heap trimmed)")
        seconds = 0.0
        for n in range(1, opts.queries + 1):
            seconds += search(query_text(rng, n))
            if n in MARKS or n == opts.queries:
                grown = rss_mb() - base
                memory.release()
                print(f"{n:5d} queries: +{grown:6.1f} MB, +{rss_mb() - base:6.1f} MB trimmed  "
                      f"compiled {leaf._COMPILED.currsize / 2**20:6.1f} MB in {len(leaf._COMPILED)} entries, "
                      f"matchers {matcher._MATCHERS.currsize / 2**20:5.1f} MB ({len(matcher._MATCHERS)}), "
                      f"parsed {parser._PARSED.currsize / 2**20:5.1f} MB ({len(parser._PARSED)}), "
                      f"{1000 * seconds / n:.1f} ms per search", flush=True)
        leaf._COMPILED.clear()
        matcher._MATCHERS.clear()
        parser._PARSED.clear()
        after_clear = rss_mb()
        memory.release()
        print(f"caches emptied: +{after_clear - base:.1f} MB; heap trimmed: +{rss_mb() - base:.1f} MB")


if __name__ == "__main__":
    main()
