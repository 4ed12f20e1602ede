"""seclake as the benchmark drives it: over HTTP, and its engine layer in-process.

Both build the same options a client sends (``options_for``); the in-process
engine runs them through ``build_plan`` and ``Root.search`` (and the summary
store for summaries) with no HTTP in between. It reads the server's lake
through a read-only view of the published splits: the server owns the lake
(one writer), and the view opens the very same split directories.
"""

from __future__ import annotations

import functools
import http.client
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from seclake.bench.classes import FACET_SIZE, FACETS, OFFSETS, PAGE, SUMMARY_FACETS, TIMELINE_FACETS, Answer, QueryClass
from seclake.bench.data import END_MS
from seclake.record.identity import RecordIds, record_id
from seclake.record.value import keyword

SEARCH = "ds/get_index_zoom_histogram_lv3"
CALLS = {"bundle": SEARCH, "histogram": SEARCH, "timeline": "ds/fsm_behavior_search",
         "summary": "ds/behavior_summary_search"}


def facet_fields(qc: QueryClass) -> tuple[str, ...]:
    return {"timeline": TIMELINE_FACETS, "summary": SUMMARY_FACETS}.get(qc.kind, FACETS)


def requests_of(qc: QueryClass, end_ms: int = END_MS) -> list[tuple[int, dict[str, Any]]]:
    """The requests of one bundle: (offset, options) -- offset 0 with facets, then offset 1000."""
    lo, hi = qc.window(end_ms)
    if qc.kind == "histogram":
        opts = {"dateFacetField": "@timestamp", "dataType": "event", "searchStr": qc.lucene,
                "range_from": lo, "range_to": hi, "fetchLimit": 0,
                "facets": {"dateFacets": [{"name": "dateHistogram", "key": "@timestamp", "interval": "hour"}]}}
        return [(-1, opts)]
    out = []
    for offset in OFFSETS:
        if qc.kind == "bundle":
            opts = {"dateFacetField": "@timestamp", "dataType": "event", "searchStr": qc.lucene,
                    "range_from": lo, "range_to": hi, "sortField": "@timestamp", "sortOrder": "desc"}
        elif qc.kind == "timeline":
            opts = {"searchStr": qc.lucene, "range_field": "timestamp", "range_from": lo, "range_to": hi,
                    "sortField": "timestamp", "sortOrder": "desc"}
        else:
            opts = {"searchStr": qc.lucene, "range_field": "from", "range_from": lo, "range_to": hi,
                    "sortField": "riskScore", "sortOrder": "desc"}
        opts.update({"fetchOffset": offset, "fetchLimit": PAGE})
        if offset == 0:
            opts["facets"] = {"facets": [{"field": f, "size": FACET_SIZE} for f in facet_fields(qc)]}
        out.append((offset, opts))
    return out


def kargs_of(qc: QueryClass, opts: dict[str, Any]) -> dict[str, Any]:
    if qc.kind in ("bundle", "histogram"):
        return {"partition": "default", "dataType": "event", "options": opts}
    return {"options": opts}


def facet_key(key: Any) -> str:
    """Buckets compare on the normalized keyword (the spelling shown may differ by engine)."""
    return keyword(key)


class HttpEngine:
    """seclake over HTTP: one keep-alive connection of the standard library's
    ``http.client``, JSON in and out.

    Not httpx, which the other stages use: its own Python per request took
    ~0.6 ms after an idle moment (a bundle follows other engines' runs),
    measured here against the same server, and that is the client's cost, not
    the server's, which the HTTP / engine layer figure is about.

    The server runs with its default opaque record ids; ``ids`` (the
    deployment's, read from its database) turns them back into the log
    sequences the other engines answer with, so pages compare."""

    name = "http"

    def __init__(self, url: str, token: str, ids: RecordIds):
        self.url, self.token, self.ids = url, token, ids
        # The log sequence of a shown docId (a keyed permutation, ~3 µs each: 40 per bundle of
        # two pages), remembered: the timed rounds repeat the warm-up's hits, and the client's
        # bookkeeping is not the server's cost, which the HTTP / engine layer figure is about.
        self._sequence = functools.lru_cache(maxsize=1 << 16)(ids.sequence)
        where = urlsplit(url)
        self.http = http.client.HTTPConnection(where.hostname, where.port, timeout=600)
        self.headers = {"Servicetoken": token, "Content-Type": "application/json"}

    def reopen(self, url: str, token: str) -> None:
        self.http.close()
        self.__init__(url, token, self.ids)

    def close(self) -> None:
        self.http.close()

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        data = orjson.dumps(body)
        try:
            self.http.request("POST", path, body=data, headers=self.headers)
            r = self.http.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # The server closed the idle keep-alive connection (uvicorn's
            # timeout is 5 s; httpx reconnects by itself, http.client does
            # not): a search is safe to send again, on a new connection.
            self.http.close()
            self.http.request("POST", path, body=data, headers=self.headers)
            r = self.http.getresponse()
        return r.status, orjson.loads(r.read())

    def run(self, qc: QueryClass, end_ms: int = END_MS) -> Answer:
        answer = Answer(total=-1)
        for offset, opts in requests_of(qc, end_ms):
            status, body = self.post(f"/api/{CALLS[qc.kind]}", {"kargs": kargs_of(qc, opts)})
            if status != 200 or body.get("verdict") != "OK":
                raise RuntimeError(f"{qc.name} over HTTP answered {status}: {str(body)[:500]}")
            resp = body["response"]
            answer.total = resp["hits"]["total"]
            hits = resp["hits"]["hits"]
            if offset >= 0:
                if qc.kind == "bundle":
                    answer.pages[offset] = [self._sequence(h["docId"]) for h in hits]
                elif qc.kind == "summary":  # summaries have ids of their own
                    answer.pages[offset] = [h["_id"] for h in hits]
                else:
                    answer.pages[offset] = [record_id(self._sequence(int(h["_id"], 16))) for h in hits]
            aggs = resp.get("aggregations") or {}
            if offset == 0:
                for f in facet_fields(qc):
                    answer.facets[f] = [(facet_key(b["key"]), b["doc_count"]) for b in aggs[f]["buckets"]]
            if qc.kind == "histogram":
                answer.histogram = [(b["key"], b["doc_count"]) for b in aggs["dateHistogram"]["buckets"]]
        return answer


class SplitView:
    """The published splits of a lake, opened read-only (the server keeps writing it)."""

    def __init__(self, data_dir: Path, db):
        from seclake.storage.catalog import Catalog
        from seclake.storage.layout import Layout

        self.layout = Layout(data_dir)
        self.catalog = Catalog(db)
        self._splits: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.refresh()

    def refresh(self) -> None:
        from seclake.storage.catalog import PUBLISHED
        from seclake.storage.split import Split

        entries = {e.split_id: e for e in self.catalog.entries(PUBLISHED)}
        with self._lock:
            for sid in list(self._splits):
                if sid not in entries:
                    del self._splits[sid]
            for sid, e in entries.items():
                if sid not in self._splits:
                    self._splits[sid] = Split(self.layout.split_dir(e.dataset, sid)).open()  # as the server's shelf

    def splits(self, dataset: str, time_from: int | None = None, time_to: int | None = None) -> list:
        with self._lock:
            out = [s for s in self._splits.values() if s.meta.dataset == dataset
                   and (time_from is None or s.meta.time_max >= time_from)
                   and (time_to is None or s.meta.time_min <= time_to)]
        out.sort(key=lambda s: (s.meta.time_min, s.meta.split_id))
        return out

    def time_bounds(self, dataset: str) -> tuple[int, int] | None:
        metas = [s.meta for s in self.splits(dataset)]
        if not metas:
            return None
        return min(m.time_min for m in metas), max(m.time_max for m in metas)


class EngineLayer:
    """seclake's engine layer in-process: Services, build_plan, Root.search; no HTTP."""

    name = "engine"

    def __init__(self, data_dir: Path):
        from seclake.search.root import Root
        from seclake.services import Services
        from seclake.settings import load_settings

        from seclake.bench.server import bench_env

        env = bench_env(data_dir)
        self.settings = load_settings(data_dir=data_dir, retention_days=int(env["SECLAKE_RETENTION_DAYS"]))
        # Not started: the server owns the lake; this process only reads published splits.
        self.services = Services(self.settings)
        self.view = SplitView(data_dir, self.services.db)
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bench-leaf")
        self.root = Root(self.view.splits, self.pool)

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.services.db.dispose()

    def run(self, qc: QueryClass, end_ms: int = END_MS) -> Answer:
        from seclake.api.options import build_plan
        from seclake.record.dataset import BEHAVIORS, DATASETS

        answer = Answer(total=-1)
        for offset, opts in requests_of(qc, end_ms):
            if qc.kind == "summary":
                store = self.services.summaries
                plan, names = build_plan(opts, store.dataset, self.settings, default_sort="riskScore",
                                         default_range_field="from", data_bounds=store.time_bounds())
                result = store.search(plan)
            else:
                dataset = BEHAVIORS if qc.kind == "timeline" else DATASETS["event"]
                plan, names = build_plan(opts, dataset, self.settings,
                                         default_sort="timestamp" if qc.kind == "timeline" else None,
                                         default_range_field="timestamp" if qc.kind == "timeline" else None,
                                         data_bounds=self.view.time_bounds(dataset.name))
                result = self.root.search(plan)
            answer.total = result.total
            if offset >= 0:
                if qc.kind == "bundle":
                    answer.pages[offset] = [h.docid for h in result.hits]
                elif qc.kind == "timeline":
                    answer.pages[offset] = [record_id(h.docid) for h in result.hits]
                else:
                    answer.pages[offset] = [h.source["id"] for h in result.hits]
            if offset == 0:
                by_name = {}
                for p, f in result.facets.items():
                    sent = names.get(p, p)  # the name sent, or the names (two names may mean one path)
                    for n in sent if isinstance(sent, list) else [sent]:
                        by_name[n] = f
                for f in facet_fields(qc):
                    facet = by_name.get(f) or result.facets.get(plan_path(f, qc))
                    answer.facets[f] = [(facet_key(b.key), b.doc_count) for b in facet.buckets]
            if qc.kind == "histogram":
                answer.histogram = list(result.histograms["dateHistogram"])
        return answer


def plan_path(name: str, qc: QueryClass) -> str:
    from seclake.record.dataset import BEHAVIORS, DATASETS

    if qc.kind == "summary":
        from seclake.detect.summaries import SUMMARY_FIELDS

        return SUMMARY_FIELDS.resolve(name)
    return (BEHAVIORS if qc.kind == "timeline" else DATASETS["event"]).resolve(name)
