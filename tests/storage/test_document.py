"""Documents: the fast builder gives exactly the documents of the plain definition.

``reference`` below is the definition written leaf by leaf, the way a reader
checks it against fieldmap.py: flatten the record, and for each (path, value)
add its existence terms, its keyword and facet terms, its default-field text
and its typed values; a first pass over all records decides the typed fields.
storage/document.py computes the same in one cached walk; these tests
compare the two on demo records and on random records full of traps (dotted
keys, arrays of objects, nesting past the depth limit, booleans beside 1 and
1.0, numbers as strings, IPs, nulls, the time, text and date fields).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seclake.demo import generate
from seclake.ingest.parser import parse_line
from seclake.record.dataset import EVENTS, FLOWS, SUMMARIES, Dataset, time_of
from seclake.record.flatten import MAX_DEPTH, leaves
from seclake.record.value import as_ip, as_number, keyword, keyword_terms, scalar_text, tokens
from seclake.storage import document, shape
from seclake.storage.document import Documents, _outside
from seclake.storage.fieldmap import SEP, FieldMap, cut


def reference(sources: list[dict], dataset: Dataset, version: int = 3) -> tuple[FieldMap, list[dict]]:
    fields = FieldMap()
    for source in sources:
        for path, value in leaves(source):
            if path == dataset.time_field:
                continue
            if dataset.is_text(path):
                fields.add_text(path)
                continue
            if as_number(value) is not None:
                fields.add_number(path)
            if as_ip(value) is not None:
                fields.add_ip(path)
    docs = []
    for i, source in enumerate(sources):
        kw, kt, fr, ex, text, typed = set(), set(), {}, set(), [], {}
        for path, value in leaves(source):
            parts = path.split(".")
            ex.update(".".join(parts[:j]) for j in range(1, len(parts) + 1))
            if path == dataset.time_field:
                continue
            if dataset.is_text(path):
                # Format 2 indexes a text value once: in its own field, or in
                # the default field when it has none (format 1: in both).
                if version == 1 or path not in fields.texts:
                    text.append(scalar_text(value))
                if path in fields.texts:
                    typed.setdefault(fields.texts[path], []).append(scalar_text(value))
                continue
            if version == 1:
                kw.update(cut(path + SEP + t) for t in keyword_terms(value))
            else:  # the keyword in kw, the lowercased text in kt where it differs
                kw.add(cut(path + SEP + keyword(value)))
                if scalar_text(value).lower() != keyword(value):
                    kt.add(cut(path + SEP + scalar_text(value).lower()))
            fr.setdefault(cut(path + SEP + keyword(value)), scalar_text(value))
            number, ip = as_number(value), as_ip(value)
            if number is not None and path in fields.numbers:
                typed.setdefault(fields.numbers[path], []).append(number)
            if ip is not None and path in fields.ips:
                # The column holds the address without an IPv6 zone (tantivy refuses one).
                typed.setdefault(fields.ips[path], []).append(str(ip).partition("%")[0])
            if not dataset.is_date(path):
                text.append(scalar_text(value))
        if version >= 2:
            # Values found in the message at token boundaries are searched there (test below).
            for path in sorted(dataset.text_fields):
                message = source.get(path)
                if "." not in path and isinstance(message, str) and message:
                    text = _outside(text, message)
        doc = {
            "docid": i, "ts": time_of(source, dataset), "kw": kw,
            "fr": {t for t in (facet_term(k, s, version) for k, s in fr.items()) if t is not None},
            "ex": ex, "all": text, **typed,
        }
        if version >= 2:
            doc["kt"] = kt
        docs.append(doc)
    return fields, docs


def facet_term(key: str, spelling: str, version: int) -> str | None:
    """Format 2 has no facet term for a value spelled as its keyword (a cut
    key no longer holds the whole keyword: the spelling stays)."""
    norm = key.partition(SEP)[2]
    if version >= 2 and spelling == norm and SEP not in norm:
        return None
    return key + SEP + spelling


FIXED = frozenset({"docid", "ts", "kw", "kt", "fr", "ex", "all"})


def built(sources: list[dict], dataset: Dataset, version: int = 3) -> tuple[FieldMap, list[dict]]:
    documents = Documents(dataset, version)
    docs = [documents.document(s, i, time_of(s, dataset)) for i, s in enumerate(sources)]
    # Term fields are sets to the index (no positions); text and typed values keep their order.
    for d in docs:
        ex = set(d["ex"])
        for term in d.pop("sh", ()):  # format 3: a record's paths are its shape's, in the split's table
            shapes = documents.shapes
            assert not ex, "a record has a shape or existence terms, not both"
            ex.update(shapes.paths[i] for i in shapes.sets[int(term)])
        d["kw"], d["fr"], d["ex"] = set(d["kw"]), set(d["fr"]), ex
        if "kt" in d:
            d["kt"] = set(d["kt"])
        # A typed or text field with one value holds it alone (tantivy takes either).
        for name, value in d.items():
            if name not in FIXED and not isinstance(value, list):
                d[name] = [value]
    return documents.fields, docs


def _same(a, b) -> bool:
    """Equal, and of the same types all the way down (1 and 1.0 index differently)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def assert_same(sources: list[dict], dataset: Dataset, version: int = 3) -> None:
    want_fields, want = reference(sources, dataset, version)
    got_fields, got = built(sources, dataset, version)
    assert got_fields.to_json() == want_fields.to_json()
    # Field names are given in order of first sight: the same names, the same order.
    assert list(got_fields.numbers.items()) == list(want_fields.numbers.items())
    for g, w in zip(got, want):
        assert _same(g, w), (g, w)


def test_demo_records_give_the_same_documents():
    sources = {"event": [], "flow": []}
    for line in generate(days=2, end_ms=1_793_491_200_000, events_per_day=1500, seed=3):
        parsed = parse_line(line.line, vendor=line.vendor, dataset=line.dataset, received_ms=0, customer=line.customer)
        if parsed is not None:
            sources[line.dataset].append(parsed[0])
    assert len(sources["event"]) > 1000 and len(sources["flow"]) > 300
    for version in (3, 2, 1):  # split formats
        assert_same(sources["event"], EVENTS, version)
        assert_same(sources["flow"], FLOWS, version)


# Stored records are JSON: no NaN or infinity among their numbers.
SCALARS = st.one_of(
    st.sampled_from(["deny", "Deny", "", "443", "007", "7", "x443", "1e3", "10.0.0.1", "2001:db8::1", "fe80::1%10",
                     "::ffff:10.9.9.9", "1.2.3", "12:30", "true", "Ünïcode", "a.b"]),
    st.sampled_from([0, 1, 7, 443, -5, 2**70, 1.0, 0.5, 443.0, 1e300, -0.0, True, False]),
    st.text(max_size=6),
    st.integers(),
    st.floats(allow_nan=False),
)
KEYS = st.sampled_from(["a", "b", "a.b", "@timestamp", "@message", "from", "to", "comments", "createdOn",
                        "comments.createdOn", "x"])
VALUES = st.recursive(
    st.one_of(st.none(), SCALARS),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=12,
)
RECORDS = st.dictionaries(KEYS, VALUES, max_size=5)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RECORDS, min_size=1, max_size=6), st.sampled_from([EVENTS, SUMMARIES]))
def test_random_records_give_the_same_documents(sources, dataset):
    assert_same(sources, dataset)


def test_summary_records_with_date_fields_give_the_same_documents():
    sources = [
        {"from": 1_700_000_000_000 + i, "to": [1_700_000_000_000, "2023"], "riskScore": i * 1.5,
         "comments": [{"createdOn": 1_700_000_000_000 + i, "text": "Looks OK"}, {"createdOn": None}],
         "comments.createdOn": i, "behaviors": ["brute", "Brute", i % 2 == 0]}
        for i in range(6)
    ]
    assert_same(sources, SUMMARIES)


def _deep(depth: int) -> dict:
    node: dict = {"leaf": "v", "n": 1}
    for _ in range(depth):
        node = {"k": node, "l": [[node]]}
    return node


def test_nesting_past_the_depth_limit_is_cut_the_same_way():
    assert_same([_deep(MAX_DEPTH - 2), _deep(MAX_DEPTH), _deep(MAX_DEPTH + 2)], EVENTS)


def test_the_same_documents_after_the_value_cache_starts_over(monkeypatch):
    monkeypatch.setattr(document, "CACHE_LIMIT", 5)
    sources = [{"@fields": {"port": i % 9, "ip": f"10.0.0.{i % 7}", "tag": ["x", i % 3]}} for i in range(40)]
    assert_same(sources, EVENTS)


def test_the_same_documents_whatever_the_shape_cache_keeps(monkeypatch):
    # Records of a few shapes share their existence terms; a shape larger
    # than a hundredth of the cache is not kept, and the cache starts over
    # when full: the documents stay the same either way.
    monkeypatch.setattr(document, "SHAPE_LIMIT", 300)
    sources = [{"@fields": {"port": i, **({"ip": "10.0.0.1"} if i % 3 else {}), "tag": ["x"] * (i % 5)}}
               for i in range(40)]
    sources.append({"@fields": {f"k{i}": i for i in range(50)}})
    assert_same(sources, EVENTS)


def test_records_past_the_table_of_shapes_keep_their_existence_terms(monkeypatch):
    # A split of records each of its own shape must not grow split.json
    # without bound: past the table's bounds, a record of a new shape has
    # its existence terms, as in format 2; records of known shapes still
    # get their shape.
    monkeypatch.setattr(shape, "MAX_SHAPES", 3)
    sources = [{"@fields": {f"k{i % 6}": i, "port": 1}} for i in range(12)]
    assert_same(sources, EVENTS)
    documents = Documents(EVENTS, 3)
    docs = [documents.document(s, i, 0) for i, s in enumerate(sources)]
    assert [("sh" in d, bool(d["ex"])) for d in docs[:6]] == [(True, False)] * 3 + [(False, True)] * 3
    assert all("sh" in d for d in docs[6:9])  # k0..k2 again: shapes 0..2
    assert documents.shapes.spilled and len(documents.shapes.sets) == 3
    monkeypatch.setattr(shape, "MAX_SHAPES", 1000)
    monkeypatch.setattr(shape, "MAX_MEMBERS", 5)  # the paths of one shape: @fields, .k0, .port
    documents = Documents(EVENTS, 3)
    docs = [documents.document(s, i, 0) for i, s in enumerate(sources[:2])]
    assert "sh" in docs[0] and "sh" not in docs[1]
    assert sorted(docs[1]["ex"]) == ["@fields", "@fields.k1", "@fields.port"]


def _contiguous(part: list[str], whole: list[str]) -> bool:
    n = len(part)
    return any(whole[i:i + n] == part for i in range(len(whole) - n + 1))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab1 .-=\"é_ा", max_size=8), st.text(alphabet="ab1 .-=\"é_ा", max_size=30))
def test_a_value_left_out_of_the_default_field_has_its_words_in_the_message(value, message):
    # Every term, phrase or pattern of the default field that matches the
    # value then matches the message: no search loses a record.
    if not _outside([value], message):
        assert _contiguous(tokens(value), tokens(message)), (value, message)


def test_fields_cut_from_their_message_are_not_indexed_twice():
    source = {"@message": 'date=2026-10-30 devname="fw-01" srcip=10.1.2.3 action="deny" user=Bob',
              "@fields": {"devname": "fw-01", "srcip": "10.1.2.3", "action": "deny", "user": "Bob", "vd": "root",
                          "port": 44}}
    doc = Documents(EVENTS).document(source, 1, 0)
    assert doc["all"] == ["root", "44"]  # the two values the message does not hold
    assert Documents(EVENTS, version=1).document(source, 1, 0)["all"][1:] == ["fw-01", "10.1.2.3", "deny", "Bob", "root", "44"]
