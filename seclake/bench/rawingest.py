"""The floor for ingest: the same parsed records indexed by tantivy-py directly.

What the issue's ingest target is measured against, in the same run: the
records seclake would store, parsed beforehand (not timed), indexed by
tantivy with a plain schema (the message as text with positions, every
field as one JSON field, the timestamp fast, the record stored in tantivy's
own store), as many writer threads as cores. Timed: turning each record
into a tantivy document, adding it and the final commit; no log, no rules,
no HTTP, no parsing. A rate, so it runs on a sample (the first batches).

It runs in a process of its own started as seclake's split builders are,
so both use the same C allocator (``storage/allocator.py``): tantivy's
writer threads are allocator-bound, and under glibc's allocator the floor
was 0.57x of what it is under jemalloc here.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import tantivy

from seclake.bench.cpu import own_cpu
from seclake.bench.data import DataSet
from seclake.bench.ingest import du_bytes, sample, written_back
from seclake.ingest.parser import parse_line
from seclake.storage import allocator

HEAP_BYTES = 256 * 1024 * 1024


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("message", tokenizer_name="default", index_option="position")
    sb.add_json_field("fields", tokenizer_name="raw", index_option="basic")
    sb.add_integer_field("ts", fast=True, indexed=True)
    sb.add_bytes_field("record", stored=True)
    return sb.build()


def raw_ingest(data: DataSet, directory: Path, max_lines: int | None = None) -> dict[str, Any]:
    """The floor, measured in a child process (see above)."""
    with tempfile.TemporaryDirectory(prefix="seclake-floor-") as tmp:
        args, out = Path(tmp) / "args.pickle", Path(tmp) / "out.pickle"
        args.write_bytes(pickle.dumps((data, directory, max_lines)))
        subprocess.run([sys.executable, "-m", "seclake.bench.rawingest", str(args), str(out)], check=True)
        return pickle.loads(out.read_bytes())


def _measure(data: DataSet, directory: Path, max_lines: int | None = None) -> dict[str, Any]:
    batches, lines = sample(data, max_lines)
    records: list[bytes] = []
    for b in batches:
        with open(b.path, encoding="utf-8") as f:
            for line in f:
                parsed = parse_line(line.rstrip("\n"), vendor=b.vendor, dataset=b.dataset, received_ms=0,
                                    customer=b.customer)
                if parsed is not None:
                    records.append(orjson.dumps(parsed[0]))
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    schema = _schema()
    index = tantivy.Index(schema, path=str(directory))
    threads = os.cpu_count() or 1
    writer = index.writer(HEAP_BYTES, threads)
    from_dict, add = tantivy.Document.from_dict, writer.add_document
    written_back()
    started, cpu_started, own_started = time.perf_counter(), own_cpu(), time.thread_time()
    for body in records:
        record = orjson.loads(body)
        add(from_dict({"message": record.get("@message") or "", "fields": record,
                       "ts": int(record.get("@timestamp") or 0), "record": body}, schema))
    own = time.thread_time() - own_started  # documents built and handed over, in Python
    writer.commit()
    writer.wait_merging_threads()
    seconds = time.perf_counter() - started
    cpu = own_cpu() - cpu_started
    disk = du_bytes(directory)
    shutil.rmtree(directory, ignore_errors=True)
    return {
        "path": "raw",
        "allocator": "jemalloc" if allocator.in_use() else "system",
        "lines": lines,
        "records": len(records),
        "sample_of": data.lines,
        "writer_threads": threads,
        "seconds": seconds,
        # What indexing alone costs per record (this process's every thread: the document built
        # in Python, tantivy's writer threads): the build workers' share is judged against it.
        "cpu_us_per_record": cpu / len(records) * 1e6 if records else None,
        "python_us_per_record": own / len(records) * 1e6 if records else None,
        "events_per_second": len(records) / seconds if seconds else None,
        "searchable_events_per_second": len(records) / seconds if seconds else None,
        "seconds_to_searchable": 0.0,
        "lake_bytes": disk,
        "bytes_per_event": disk / len(records) if records else None,
    }


if __name__ == "__main__":
    _args, _out = sys.argv[1:3]
    Path(_out).write_bytes(pickle.dumps(_measure(*pickle.loads(Path(_args).read_bytes()))))
