"""Writing and opening one immutable split.

A split directory holds a tantivy index and ``split.json`` (format version,
time bounds, record count, the field map, the customers: ``customers.py``).
It is built in a staging directory and renamed into place only when
complete, so a reader never sees half a split; the catalog publishes it
afterwards.

Two formats are read; splits are written in the newest:

- **1**: the records are stored in tantivy's document store (field ``src``);
  the default field ``all`` holds every keyword and every text value.
- **2**: the records are in ``records.zst`` (``recordstore.py``: zstd with a
  trained dictionary, ~3x smaller than tantivy's lz4 store); a text value
  with a field of its own (the message) is indexed there only, not again in
  ``all``, so the default field is ``all`` plus the split's text fields
  (``default_fields``), and ``all`` leaves out keyword values found in the
  message at token boundaries (their words are searched there). A value
  has one keyword term (``kw``, which facets count), its text in ``kt``
  where it differs, and a facet term in ``fr`` only when it is not spelled
  as its keyword (``document.py``). Numbers, addresses, times and docIds
  are fast fields only.
- **3**: as 2, but a record's existence terms (``ex``: its paths and their
  parents) are one shape term (``sh``) numbering its set of paths in
  ``split.json`` (``shape.py``); past the table's bounds, records of new
  shapes keep ``ex``.

A merge reads any of them and writes the newest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import tantivy

from seclake.errors import Unavailable
from seclake.record.dataset import Dataset, time_of
from seclake.storage.customers import CustomerSet, Customers, from_stored
from seclake.storage.document import Documents
from seclake.storage import recordstore
from seclake.storage.fieldmap import TOKENIZER, FieldMap
from seclake.storage.shape import Shapes

FORMAT_VERSION = 3
READABLE_FORMATS = (1, 2, 3)
# The format new splits are written in; tests of reading older splits set it.
WRITE_FORMAT = FORMAT_VERSION
META_FILE = "split.json"
WRITER_HEAP_BYTES = 128 * 1024 * 1024
# How many records a writer handles between two looks at ``stop``: ~0.1 s of
# work, against a microsecond per look.
STOP_CHECK_RECORDS = 1024


class SplitAborted(Exception):
    """The writer's ``stop`` said to give up: nothing was written at ``dest``."""


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
    # Signatures of the records' @customer values; None: unknown (past the
    # cap, or a split written before splits recorded them).
    customers: Customers = None
    # File name -> BLAKE2b digest of every file of the split but split.json,
    # so a copy (a download from the split store) is checked byte for byte;
    # None for splits written before splits recorded them.
    files: dict[str, str] | None = None
    # Format 3: the numbered path sets of its records (``shape.py``).
    shapes: Shapes | None = None
    # (docId, why) of the records the index could not take whole, indexed in
    # part (``_write``), for the flusher to log and count; not stored.
    refused: list[tuple[int, str]] = field(default_factory=list)

    def to_json(self) -> dict:
        data = {
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
            "customers": None if self.customers is None else list(self.customers),
            "files": self.files,
        }
        if self.shapes is not None:
            data["shapes"] = self.shapes.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict) -> "SplitMeta":
        version = data.get("format_version")
        if version not in READABLE_FORMATS:
            raise ValueError(f"split format {version} is not one of {READABLE_FORMATS}: written by a newer seclake?")
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
            customers=from_stored(data.get("customers")),
            files=data.get("files"),
            format_version=version,
            shapes=Shapes.from_json(data["shapes"]) if version >= 3 else None,
        )


def _analyzer() -> tantivy.TextAnalyzer:
    # tantivy's simple tokenizer splits where char::is_alphanumeric is false:
    # letters and digits, as record.value.tokens does (a regex tokenizer with
    # the same classes indexes four times slower). They differ only on the
    # dependent vowel signs of some Indic scripts, which Rust counts as letters.
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.lowercase()).build()


def build_schema(fields: FieldMap, version: int = FORMAT_VERSION) -> tantivy.Schema:
    # Format 2 keeps numbers, addresses, times and docIds in fast fields
    # only: tantivy runs range queries on the column, and an inverted index
    # of them (a term per distinct byte count, port or millisecond) took a
    # tenth of a split. Format 1 indexed them as well.
    indexed = version == 1
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("docid", fast=True, indexed=indexed)
    sb.add_integer_field("ts", fast=True, indexed=indexed)
    if version == 1:
        sb.add_bytes_field("src", stored=True)
    terms = ["kw", "fr", "ex"] if version == 1 else ["kw", "kt", "fr", "ex"]
    if version >= 3:
        terms.append("sh")  # a record's shape (shape.py)
    for name in terms:
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("all", tokenizer_name=TOKENIZER, index_option="position")
    for name in fields.texts.values():
        sb.add_text_field(name, tokenizer_name=TOKENIZER, index_option="position")
    for name in fields.numbers.values():
        sb.add_float_field(name, fast=True, indexed=indexed)
    for name in fields.ips.values():
        sb.add_ip_addr_field(name, fast=True, indexed=indexed)
    return sb.build()


def write_split(records: Iterable[StoredRecord], dataset: Dataset, dest: Path, split_id: str,
                version: int | None = None, stop: Callable[[], bool] | None = None,
                dictionary: bool = True, text_only: bool = False) -> SplitMeta:
    """Write records as a split at ``dest`` (which must not exist) and return its meta.

    ``records`` is read once, so a generator that parses records as they are
    needed keeps only their documents in memory, not every parsed record.
    ``version`` defaults to ``WRITE_FORMAT``. ``stop`` is asked every
    ``STOP_CHECK_RECORDS`` records; when it answers true the write ends with
    ``SplitAborted`` (what a merge does when its lake is stopping, as Lucene
    aborts running merges on close). However the write fails, the staging
    directory is removed. ``dictionary=False``: the record store trains no
    compression dictionary (``recordstore.py``).

    A record the index cannot take whole never fails the split: a value its
    typed column refuses costs the record its number and address columns
    only, and a record whose document cannot be made at all is indexed by
    the words of its JSON (``text_only`` indexes every record so: the
    flusher's last resort for records that fail a build alone). Either way
    its body is stored whole and it is listed in ``SplitMeta.refused``.
    """
    version = WRITE_FORMAT if version is None else version
    if version not in READABLE_FORMATS:
        raise ValueError(f"split format {version} is not one of {READABLE_FORMATS}")
    staging = dest.with_name(dest.name + ".staging")
    try:
        return _write(records, dataset, dest, staging, split_id, version, stop, dictionary, text_only)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _checked(items: Iterable, stop: Callable[[], bool] | None) -> Iterable:
    """``items``, asking ``stop`` every ``STOP_CHECK_RECORDS``; as they are when there is no ``stop`` (builds)."""
    if stop is None:
        return items
    return _stoppable(items, stop)


def _stoppable(items: Iterable, stop: Callable[[], bool]) -> Iterable:
    for i, item in enumerate(items):
        if i % STOP_CHECK_RECORDS == 0 and stop():
            raise SplitAborted("the split's writer was told to stop")
        yield item


def _write(records: Iterable[StoredRecord], dataset: Dataset, dest: Path, staging: Path, split_id: str,
           version: int, stop: Callable[[], bool] | None, dictionary: bool = True,
           text_only: bool = False) -> SplitMeta:
    # Every document is built before the index is made: the schema holds the
    # split's typed fields, known only once every record has been seen.
    documents = Documents(dataset, version)
    customers = CustomerSet()
    docs: list[dict[str, Any]] = []
    bodies: list[tuple[int, bytes]] = []
    refused: list[tuple[int, str]] = []
    for rec in _checked(records, stop):
        body = rec.body if rec.body is not None else orjson.dumps(rec.source)
        customers.add(rec.source)
        ts = time_of(rec.source, dataset)
        if text_only:
            doc = _words_of(rec.docid, ts, body)
            refused.append((rec.docid, "indexed by the words of its JSON only"))
        else:
            try:
                doc = documents.document(rec.source, rec.docid, ts)
            except Exception as e:  # noqa: BLE001 - one record never fails its split
                doc = _words_of(rec.docid, ts, body)
                refused.append((rec.docid, f"its document could not be made ({type(e).__name__}: {e}); "
                                           "indexed by the words of its JSON only"))
        if version == 1:
            doc["src"] = body
        else:
            bodies.append((rec.docid, body))
        docs.append(doc)
    if not docs:
        raise ValueError("a split needs at least one record")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if bodies:
        recordstore.write(staging / recordstore.FILE_NAME, bodies, dictionary=dictionary)
        del bodies
    fields = documents.fields
    schema = build_schema(fields, version)
    index = tantivy.Index(schema, path=str(staging))
    index.register_tokenizer(TOKENIZER, _analyzer())
    writer = index.writer(WRITER_HEAP_BYTES, 1)
    from_dict, add = tantivy.Document.from_dict, writer.add_document
    typed = {*fields.numbers.values(), *fields.ips.values()}
    try:
        for doc in _checked(docs, stop):
            try:
                made = from_dict(doc, schema)
            except ValueError as e:
                # A value its column refuses (an IPv6 zone id did, issue 39):
                # the record keeps its terms, text and body, not its columns.
                made = from_dict({k: v for k, v in doc.items() if k not in typed}, schema)
                refused.append((doc["docid"], f"{e}; indexed without its number and address columns"))
            add(made)
    except SplitAborted:
        writer.rollback()  # its indexing threads write no more into the staging directory
        raise
    writer.commit()
    writer.wait_merging_threads()
    meta = SplitMeta(
        split_id=split_id,
        dataset=dataset.name,
        time_min=min(d["ts"] for d in docs),
        time_max=max(d["ts"] for d in docs),
        num_records=len(docs),
        seq_min=min(d["docid"] for d in docs),
        seq_max=max(d["docid"] for d in docs),
        fields=fields,
        customers=customers.customers,
        format_version=version,
        # As a reader holds it: the writer's index of path sets need not travel back from a worker.
        shapes=None if documents.shapes is None else Shapes.from_json(documents.shapes.to_json()),
        refused=refused,
    )
    meta.size_bytes = sum(p.stat().st_size for p in staging.iterdir() if p.is_file())
    meta.files = {p.name: file_digest(p) for p in index_files(staging)}
    (staging / META_FILE).write_text(json.dumps(meta.to_json()))
    seal(staging, dest)
    return meta


def _words_of(docid: int, ts: int, body: bytes) -> dict[str, Any]:
    """A record's document when the index cannot take its values: its id,
    time and the text of its JSON in the default field (found by its words
    and its docId; its body is stored whole)."""
    return {"docid": docid, "ts": ts, "all": [body.decode("utf-8", "replace")]}


def meta_of(split: Any) -> Any:
    """What describes a split as a lister returns it: an open ``Split``'s meta,
    or a catalog entry itself (both give split_id, dataset, time bounds and
    customers)."""
    return getattr(split, "meta", split)


def index_files(directory: Path) -> list[Path]:
    """The files that make a split (with split.json once written); tantivy's
    lock files are not part of it: a reader makes its own."""
    return [p for p in directory.iterdir() if p.is_file() and not p.name.endswith(".lock")]


def digest() -> "hashlib._Hash":
    """The hash split files are checked with (fast in software, 256 bits)."""
    return hashlib.blake2b(digest_size=32)


def file_digest(path: Path) -> str:
    h = digest()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def seal(staging: Path, dest: Path) -> None:
    """Make a complete split in ``staging`` durable and move it to ``dest`` in one rename."""
    _fsync_dir_files(staging)
    os.rename(staging, dest)
    _fsync(dest.parent)


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
    """A published split: its meta, and the index, schema, searcher (shared by
    all threads) and record store, opened on first use (``open``).

    A command that only writes the lake never opens them: each open tantivy
    index has a thread of its own (its meta file's watcher), and an import
    command that opened every split of the lake at start spent 0.1-0.3 s
    there and about as long again at exit, stopping those threads one by one.
    """

    def __init__(self, path: Path):
        self.path = path
        self.meta = SplitMeta.from_json(json.loads((path / META_FILE).read_text()))
        self._opened: tuple[tantivy.Index, tantivy.Schema, tantivy.Searcher, recordstore.RecordStore | None] | None = None
        self._lock = threading.Lock()

    def open(self) -> Split:
        """Open the index and the record store now (the server opens what it will search at once)."""
        self._open()
        return self

    @property
    def is_open(self) -> bool:
        return self._opened is not None

    def _open(self) -> tuple[tantivy.Index, tantivy.Schema, tantivy.Searcher, recordstore.RecordStore | None]:
        opened = self._opened
        if opened is None:
            with self._lock:
                opened = self._opened
                if opened is None:
                    index = tantivy.Index.open(str(self.path))
                    index.register_tokenizer(TOKENIZER, _analyzer())
                    store = (recordstore.RecordStore(self.path / recordstore.FILE_NAME)
                             if self.meta.format_version >= 2 else None)
                    opened = self._opened = (index, index.schema, index.searcher(), store)
        return opened

    @property
    def index(self) -> tantivy.Index:
        return self._open()[0]

    @property
    def schema(self) -> tantivy.Schema:
        return self._open()[1]

    @property
    def searcher(self) -> tantivy.Searcher:
        return self._open()[2]

    @property
    def store(self) -> recordstore.RecordStore | None:
        return self._open()[3]

    @property
    def fields(self) -> FieldMap:
        return self.meta.fields

    def default_fields(self) -> tuple[str, ...]:
        """The fields a query without a field name searches (see the module's formats)."""
        if self.meta.format_version == 1:
            return ("all",)
        return ("all", *self.fields.texts.values())

    def exists_query(self, path: str) -> tantivy.Query:
        """The records of this split that have ``path`` (a leaf or a parent)."""
        terms = tantivy.Query.term_query(self.schema, "ex", path)
        shapes = self.meta.shapes
        if shapes is None:
            return terms
        having = shapes.having(path)
        if not having:
            return terms if shapes.spilled else tantivy.Query.empty_query()
        by_shape = tantivy.Query.term_set_query(self.schema, "sh", having)
        if not shapes.spilled:
            return by_shape
        return tantivy.Query.boolean_query([(tantivy.Occur.Should, terms), (tantivy.Occur.Should, by_shape)])

    def keyword_fields(self) -> tuple[str, ...]:
        """The fields whose terms patterns and string ranges over keywords run on."""
        return ("kw",) if self.meta.format_version == 1 else ("kw", "kt")

    def body(self, docid: int, address: tantivy.DocAddress | None = None) -> bytes | None:
        """The stored JSON of ``docid`` (at ``address`` in the index, which a
        format-1 split needs), or None if the split does not hold it."""
        if self.store is not None:
            return self.store.get(docid)
        if address is None:
            found = self.bodies_of([docid])
            return found.get(docid)
        return self.searcher.doc(address).get_first("src")

    def bodies_of(self, docids: Sequence[int]) -> dict[int, bytes]:
        """docId -> stored JSON, for those of ``docids`` this split holds."""
        wanted = sorted({int(d) for d in docids})
        if not wanted:
            return {}
        if self.store is not None:
            found = ((d, self.store.get(d)) for d in wanted)
            return {d: b for d, b in found if b is not None}
        query = tantivy.Query.term_set_query(self.schema, "docid", wanted)
        res = self.searcher.search(query, len(wanted), order_by_field="docid", order=tantivy.Order.Asc)
        return {int(d): self.searcher.doc(a).get_first("src") for d, a in res.hits}

    def bodies(self) -> list[tuple[int, bytes]]:
        """(docId, record as stored JSON) of every record, in docid order."""
        if self.store is not None:
            return list(self.store)
        n = self.searcher.num_docs
        if n == 0:
            return []
        result = self.searcher.search(
            tantivy.Query.all_query(), limit=n, order_by_field="docid", order=tantivy.Order.Asc
        )
        doc = self.searcher.doc
        return [(int(docid), doc(addr).get_first("src")) for docid, addr in result.hits]

    def all_records(self) -> Iterable[StoredRecord]:
        """Every record of the split, in docid order."""
        return [StoredRecord(docid, orjson.loads(body), body) for docid, body in self.bodies()]


class SplitUnreadable(Unavailable):
    """A published split whose files this node cannot read."""


class DamagedSplit(Split):
    """A published split this node could not open at start (its directory
    lost or corrupt: a disk fault, an fsck, a mistaken ``rm``).

    It stays in the lake's listings, so a search over its time range names
    it as failed (a partial answer, never a silent one) instead of answering
    as if it held nothing; merges leave it alone, and its catalog row is
    kept until an operator restores its directory (from a backup) and
    restarts, or retention removes it. ``meta`` is its catalog entry.
    """

    def __init__(self, path: Path, entry: Any, reason: str):
        self.path = path
        self.meta = entry
        self.reason = reason
        self._opened = None
        self._lock = threading.Lock()

    def open(self) -> Split:
        return self  # nothing to open: searches skip it and say so

    def _open(self):  # type: ignore[override]
        raise SplitUnreadable(
            f"split {self.meta.split_id} ({self.meta.dataset}, {self.meta.num_records:,} records) cannot be read "
            f"on this node: {self.reason}"
        )
