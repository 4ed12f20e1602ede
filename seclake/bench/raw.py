"""The floor: raw tantivy over the same split directories, with hand-built queries.

No query parser, no plan, no compiler, no HTTP: each split index is opened
directly with tantivy-py, the query of a class is built by hand from the
split's field map (seclake/storage/fieldmap.py: ``kw`` keyword terms
``<path>\\0<keyword>``, ``fr`` facet terms, ``all`` the default text field,
``n<i>``/``ip<i>`` typed fields, ``ts`` the time), and count, top-k and
facets are done here. It does the same work a bundle asks of seclake (the
same two requests: offset 0 with facets, offset 1000 without), including
the tie rule (``@timestamp`` desc, then docId desc) so its answers can be
checked against everyone else's.

The architecture keeps ``tantivy`` imports to storage/ and query/; the
benchmark's floor is the one other place, by its nature.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import tantivy
from tantivy import FieldType, Occur, Query

from seclake.bench.classes import FACET_SIZE, FACETS, OFFSETS, PAGE, TIMELINE_FACETS, Answer, QueryClass
from seclake.bench.data import END_MS
from seclake.record.identity import record_id
from seclake.storage.recordstore import FILE_NAME as RECORDS_FILE, RecordStore

SEP = "\x00"
TOKENIZER = "seclake_tokens"  # the name seclake registers its analyzer under (storage/fieldmap.py)


def _rx(text: str) -> str:
    """Escape for Rust's regex crate: every ASCII non-alphanumeric as \\xHH."""
    return "".join(c if c.isalnum() or ord(c) > 127 else f"\\x{ord(c):02x}" for c in text)


class RawSplit:
    def __init__(self, path: Path):
        meta = json.loads((path / "split.json").read_text())
        self.dataset = meta["dataset"]
        self.time_min, self.time_max = meta["time_min"], meta["time_max"]
        self.numbers = meta["fields"]["numbers"]
        self.ips = meta["fields"]["ips"]
        # Format 2 indexes text values once (the message in its own field, not
        # again in ``all``), counts facets on ``kw`` and keeps the records in
        # its own zstd store.
        v2 = meta["format_version"] >= 2
        self.default = ("all", *meta["fields"]["texts"].values()) if v2 else ("all",)
        self.store = RecordStore(path / RECORDS_FILE) if v2 else None
        self.index = tantivy.Index.open(str(path))
        # Needed to open an index whose text fields name this analyzer (simple + lowercase).
        self.index.register_tokenizer(
            TOKENIZER, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.lowercase()).build())
        self.schema = self.index.schema
        self.searcher = self.index.searcher()


class RawEngine:
    name = "raw"

    def __init__(self, split_dirs: list[Path]):
        self.splits = [RawSplit(p) for p in split_dirs]
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bench-raw")

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    # -- the hand-built query of each class --------------------------------

    def _query(self, qc: QueryClass, s: RawSplit) -> Query | None:
        """The class's query for one split; None when the split cannot match."""
        spec, schema = qc.spec, s.schema
        op = spec.get("op", "all")
        if op == "all":
            return None  # the time range alone
        if op == "word":
            return self._any([Query.term_query(schema, f, spec["word"]) for f in s.default])
        if op == "phrase":
            return self._any([Query.phrase_query(schema, f, spec["words"]) for f in s.default])
        if op == "kw":
            return Query.term_query(schema, "kw", f"@fields.{spec['column']}{SEP}{spec['value']}")
        if op == "deny_not_443":
            return Query.boolean_query([
                (Occur.Must, Query.term_query(schema, "kw", f"@fields.action{SEP}deny")),
                (Occur.MustNot, Query.term_query(schema, "kw", f"@fields.dstport{SEP}443")),
            ])
        if op == "suffix":
            # kw terms are already lowercased keywords: no case folding needed.
            return Query.regex_query(schema, "kw", _rx(f"@fields.{spec['column']}{SEP}") + ".*" + _rx(spec["suffix"]))
        if op == "ge":
            field = s.numbers.get(f"@fields.{spec['column']}")
            return False if field is None else Query.range_query(schema, field, FieldType.Float, float(spec["value"]), None)
        if op == "cidr":
            field = s.ips.get(f"@fields.{spec['column']}")
            if field is None:
                return False
            lo, hi = spec["lo"], spec["hi"]
            return Query.range_query(schema, field, FieldType.IpAddr,
                                     ".".join(str(lo >> k & 255) for k in (24, 16, 8, 0)),
                                     ".".join(str(hi >> k & 255) for k in (24, 16, 8, 0)))
        raise ValueError(f"no raw query for {op}")

    @staticmethod
    def _any(queries: list[Query]) -> Query:
        return queries[0] if len(queries) == 1 else Query.boolean_query([(Occur.Should, q) for q in queries])

    def _with_time(self, q: Query | None, s: RawSplit, lo: int, hi: int) -> Query:
        if s.time_min >= lo and s.time_max <= hi:
            return q if q is not None else Query.all_query()  # the whole split is in range
        ts = Query.range_query(s.schema, "ts", FieldType.Integer, lo, hi)
        return ts if q is None else Query.boolean_query([(Occur.Must, q), (Occur.Must, ts)])

    # -- one split ---------------------------------------------------------

    @staticmethod
    def _top(s: RawSplit, q: Query, k: int) -> tuple[int, list[tuple[int, int, object]]]:
        """(count, [(ts, docid, address)]) of the best k by ts desc, docid desc, ties resolved."""
        res = s.searcher.search(q, k, order_by_field="ts", order=tantivy.Order.Desc)
        addrs = [a for _, a in res.hits]
        docids = s.searcher.fast_field_values("docid", addrs) if addrs else []
        hits = [(int(ts), int(d), a) for (ts, a), d in zip(res.hits, docids)]
        if len(hits) == k and res.count > k:
            boundary = hits[-1][0]
            better = [h for h in hits if h[0] != boundary]
            ties_q = Query.boolean_query([(Occur.Must, q), (Occur.Must, Query.range_query(
                s.schema, "ts", FieldType.Integer, boundary, boundary))])
            ties = s.searcher.search(ties_q, k - len(better), order_by_field="docid", order=tantivy.Order.Desc)
            hits = better + [(boundary, int(d), a) for d, a in ties.hits]
        return res.count, hits

    @staticmethod
    def _facet(s: RawSplit, q: Query, path: str, into: dict[str, int]) -> None:
        # Records per keyword: format 2 counts its one ``kw`` term per value,
        # format 1 its ``fr`` terms (keyword and spelling).
        prefix = path + SEP
        for term, n in s.searcher.terms_with_prefix("kw" if s.store is not None else "fr", prefix, filter_query=q):
            if n > 0:
                norm = term[len(prefix):] if s.store is not None else term[len(prefix):].partition(SEP)[0]
                into[norm] = into.get(norm, 0) + n

    # -- a bundle ----------------------------------------------------------

    def run(self, qc: QueryClass, end_ms: int = END_MS) -> Answer:
        lo, hi = qc.window(end_ms)
        dataset = "behavior" if qc.kind == "timeline" else "event"
        work = []
        for s in self.splits:
            if s.dataset != dataset or s.time_max < lo or s.time_min > hi:
                continue  # time pruning, as seclake's root does
            q = self._query(qc, s) if qc.kind != "timeline" else None
            if q is False:
                continue
            work.append((s, self._with_time(q, s, lo, hi)))
        answer = Answer(total=0)
        if qc.kind == "histogram":
            answer.total, answer.histogram = self._histogram(work, lo, hi)
            return answer
        facets = TIMELINE_FACETS if qc.kind == "timeline" else FACETS
        for offset in OFFSETS:
            k = offset + PAGE

            def one(item, offset=offset, k=k):
                s, q = item
                count, hits = self._top(s, q, k)
                counts: dict[str, dict[str, int]] = {}
                if offset == 0 and count:
                    for f in facets:
                        self._facet(s, q, f, counts.setdefault(f, {}))
                return s, count, hits, counts

            parts = list(self.pool.map(one, work)) if len(work) > 1 else [one(w) for w in work]
            answer.total = sum(p[1] for p in parts)
            merged = sorted(((-ts, -d, s, a) for s, _, hits, _ in parts for ts, d, a in hits), key=lambda h: (h[0], h[1]))
            page = merged[offset:k]
            for _, d, s, a in page:  # the page's records, as seclake returns them
                orjson.loads(s.store.get(-d) if s.store is not None else s.searcher.doc(a).get_first("src"))
            answer.pages[offset] = [record_id(-d) if qc.kind == "timeline" else -d for _, d, _, _ in page]
            if offset == 0:
                for f in facets:
                    total: dict[str, int] = {}
                    for _, _, _, counts in parts:
                        for norm, n in counts.get(f, {}).items():
                            total[norm] = total.get(norm, 0) + n
                    ranked = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:FACET_SIZE]
                    answer.facets[f] = ranked
        return answer

    def _histogram(self, work, lo: int, hi: int) -> tuple[int, list[tuple[int, int]]]:
        hour = 3_600_000
        starts = list(range(lo - lo % hour, hi + 1, hour))

        def one(item):
            s, q = item
            out = s.searcher.aggregate(q, {"h": {"histogram": {"field": "ts", "interval": hour}}})
            return {int(b["key"]): b["doc_count"] for b in out["h"]["buckets"]}

        sums = {st: 0 for st in starts}
        for part in self.pool.map(one, work):
            for key, n in part.items():
                sums[key] = sums.get(key, 0) + n
        return sum(sums.values()), [(st, sums[st]) for st in starts]


def split_dirs(data_dir: Path, db) -> list[Path]:
    """The published split directories of a lake (the catalog says which are live)."""
    from seclake.storage.catalog import PUBLISHED, Catalog
    from seclake.storage.layout import Layout

    layout = Layout(data_dir)
    return [layout.split_dir(e.dataset, e.split_id) for e in Catalog(db).entries(PUBLISHED)]
