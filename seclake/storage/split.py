"""Writing and opening one immutable split.

A split directory holds a tantivy index and ``split.json`` (format version,
time bounds, record count, the field map). It is built in a staging
directory and renamed into place only when complete, so a reader never sees
half a split; the catalog publishes it afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import tantivy

from seclake.record.dataset import Dataset
from seclake.record.flatten import leaves
from seclake.record.value import as_ip, as_number, keyword, keyword_terms, scalar_text
from seclake.storage.fieldmap import SEP, TOKENIZER, FieldMap, cut

FORMAT_VERSION = 1
META_FILE = "split.json"
WRITER_HEAP_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class StoredRecord:
    """A record as the lake keeps it: its id (the write-ahead log sequence) and body.

    ``body`` is the record already encoded as JSON, when the caller has it.
    """

    docid: int
    source: dict[str, Any]
    body: bytes | None = None


@dataclass
class SplitMeta:
    split_id: str
    dataset: str
    time_min: int
    time_max: int
    num_records: int
    seq_min: int
    seq_max: int
    fields: FieldMap
    size_bytes: int = 0
    format_version: int = FORMAT_VERSION

    def to_json(self) -> dict:
        return {
            "format_version": self.format_version,
            "split_id": self.split_id,
            "dataset": self.dataset,
            "time_min": self.time_min,
            "time_max": self.time_max,
            "num_records": self.num_records,
            "seq_min": self.seq_min,
            "seq_max": self.seq_max,
            "size_bytes": self.size_bytes,
            "fields": self.fields.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict) -> "SplitMeta":
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"split format {data.get('format_version')} is not {FORMAT_VERSION}")
        return cls(
            split_id=data["split_id"],
            dataset=data["dataset"],
            time_min=data["time_min"],
            time_max=data["time_max"],
            num_records=data["num_records"],
            seq_min=data["seq_min"],
            seq_max=data["seq_max"],
            size_bytes=data.get("size_bytes", 0),
            fields=FieldMap.from_json(data["fields"]),
        )


def _analyzer() -> tantivy.TextAnalyzer:
    # tantivy's simple tokenizer splits where char::is_alphanumeric is false:
    # letters and digits, as record.value.tokens does (a regex tokenizer with
    # the same classes indexes four times slower). They differ only on the
    # dependent vowel signs of some Indic scripts, which Rust counts as letters.
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.lowercase()).build()


def build_schema(fields: FieldMap) -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("docid", fast=True, indexed=True)
    sb.add_integer_field("ts", fast=True, indexed=True)
    sb.add_bytes_field("src", stored=True)
    for name in ("kw", "fr", "ex"):
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("all", tokenizer_name=TOKENIZER, index_option="position")
    for name in fields.texts.values():
        sb.add_text_field(name, tokenizer_name=TOKENIZER, index_option="position")
    for name in fields.numbers.values():
        sb.add_float_field(name, fast=True, indexed=True)
    for name in fields.ips.values():
        sb.add_ip_addr_field(name, fast=True, indexed=True)
    return sb.build()


class _Leaves:
    """What each (path, value) leaf contributes to the index, computed once.

    Values repeat a lot in logs (hosts, users, ports, actions), so the
    analysis of a leaf is cached for the duration of one split write.
    """

    CACHE_LIMIT = 200_000

    def __init__(self, dataset: Dataset):
        self.dataset = dataset
        self._cache: dict[tuple, tuple] = {}
        self._paths: dict[str, tuple] = {}

    def path_info(self, path: str) -> tuple:
        """(exists terms, is_time, is_text, is_date) of a path."""
        info = self._paths.get(path)
        if info is None:
            parts = path.split(".")
            ex = tuple(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            ds = self.dataset
            info = (ex, path == ds.time_field, ds.is_text(path), ds.is_date(path))
            self._paths[path] = info
        return info

    def entry(self, path: str, value: Any) -> tuple:
        """(keyword terms, facet key, spelling, number, ip) of a keyword leaf."""
        key = (path, value.__class__, value)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        prefix = path + SEP
        spelling = scalar_text(value)
        ip = as_ip(value) if isinstance(value, str) else None
        hit = (
            tuple({cut(prefix + t) for t in keyword_terms(value)}),
            cut(prefix + keyword(value)),
            spelling,
            as_number(value),
            str(ip) if ip is not None else None,
        )
        if len(self._cache) >= self.CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = hit
        return hit


def _field_map(records: Iterable[StoredRecord], analysis: _Leaves) -> FieldMap:
    fields = FieldMap()
    for rec in records:
        for path, value in leaves(rec.source):
            _ex, is_time, is_text, _is_date = analysis.path_info(path)
            if is_time:
                continue  # held by the fixed ``ts`` field
            if is_text:
                fields.add_text(path)
                continue
            _terms, _fk, _spelling, number, ip = analysis.entry(path, value)
            if number is not None and path not in fields.numbers:
                fields.add_number(path)
            if ip is not None and path not in fields.ips:
                fields.add_ip(path)
    return fields


def _document(rec: StoredRecord, analysis: _Leaves, fields: FieldMap, ts: int) -> dict[str, Any]:
    kw: set[str] = set()
    fr: dict[str, str] = {}
    ex: set[str] = set()
    all_text: list[str] = []
    typed: dict[str, list] = {}
    for path, value in leaves(rec.source):
        ex_terms, is_time, is_text, is_date = analysis.path_info(path)
        ex.update(ex_terms)
        if is_time:
            continue  # held by the fixed ``ts`` field
        if is_text:
            text = scalar_text(value)
            all_text.append(text)
            name = fields.texts.get(path)
            if name is not None:
                typed.setdefault(name, []).append(text)
            continue
        terms, facet_key, spelling, number, ip = analysis.entry(path, value)
        kw.update(terms)
        # One spelling per (path, keyword) and record: facet counts stay exact.
        fr.setdefault(facet_key, spelling)
        if number is not None:
            name = fields.numbers.get(path)
            if name is not None:
                typed.setdefault(name, []).append(number)
        if ip is not None:
            name = fields.ips.get(path)
            if name is not None:
                typed.setdefault(name, []).append(ip)
        if not is_date:
            all_text.append(spelling)
    doc: dict[str, Any] = {
        "docid": rec.docid,
        "ts": ts,
        "src": rec.body if rec.body is not None else orjson.dumps(rec.source),
        "kw": list(kw),
        "fr": [k + SEP + spelling for k, spelling in fr.items()],
        "ex": list(ex),
        "all": all_text,
    }
    doc.update(typed)
    return doc


def time_of(source: dict[str, Any], dataset: Dataset) -> int:
    value = source.get(dataset.time_field)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value)


def write_split(records: Sequence[StoredRecord], dataset: Dataset, dest: Path, split_id: str) -> SplitMeta:
    """Write records as a split at ``dest`` (which must not exist) and return its meta."""
    if not records:
        raise ValueError("a split needs at least one record")
    staging = dest.with_name(dest.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    analysis = _Leaves(dataset)
    fields = _field_map(records, analysis)
    schema = build_schema(fields)
    index = tantivy.Index(schema, path=str(staging))
    index.register_tokenizer(TOKENIZER, _analyzer())
    writer = index.writer(WRITER_HEAP_BYTES, 1)
    times = []
    for rec in records:
        ts = time_of(rec.source, dataset)
        times.append(ts)
        writer.add_document(tantivy.Document.from_dict(_document(rec, analysis, fields, ts), schema))
    writer.commit()
    writer.wait_merging_threads()
    meta = SplitMeta(
        split_id=split_id,
        dataset=dataset.name,
        time_min=min(times),
        time_max=max(times),
        num_records=len(records),
        seq_min=min(r.docid for r in records),
        seq_max=max(r.docid for r in records),
        fields=fields,
    )
    meta.size_bytes = sum(p.stat().st_size for p in staging.iterdir() if p.is_file())
    (staging / META_FILE).write_text(json.dumps(meta.to_json()))
    _fsync_dir_files(staging)
    os.rename(staging, dest)
    _fsync(dest.parent)
    return meta


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir_files(directory: Path) -> None:
    for p in directory.iterdir():
        if p.is_file():
            _fsync(p)
    _fsync(directory)


class Split:
    """An open split: its meta, schema and a searcher shared by all threads."""

    def __init__(self, path: Path):
        self.path = path
        self.meta = SplitMeta.from_json(json.loads((path / META_FILE).read_text()))
        self.index = tantivy.Index.open(str(path))
        self.index.register_tokenizer(TOKENIZER, _analyzer())
        self.schema = self.index.schema
        self.searcher = self.index.searcher()
        self._lock = threading.Lock()

    @property
    def fields(self) -> FieldMap:
        return self.meta.fields

    def sources(self, docids_by_address: Sequence[tantivy.DocAddress]) -> list[dict[str, Any]]:
        return [orjson.loads(self.searcher.doc(a).get_first("src")) for a in docids_by_address]

    def all_records(self) -> Iterable[StoredRecord]:
        """Every record of the split (for merging), in docid order."""
        n = self.searcher.num_docs
        if n == 0:
            return []
        result = self.searcher.search(
            tantivy.Query.all_query(), limit=n, order_by_field="docid", order=tantivy.Order.Asc
        )
        return [
            StoredRecord(int(docid), orjson.loads(self.searcher.doc(addr).get_first("src")))
            for docid, addr in result.hits
        ]
