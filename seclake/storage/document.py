"""Records as index documents: what each leaf of a record adds to which field.

The fields are described in ``fieldmap.py``. A record's document is the
union of what its (path, value) leaves contribute (``record/flatten.py``
defines the leaves): keyword terms, facet terms, existence terms for the
path and its parents, default-field text, and typed values (numbers, IP
addresses, text) under the split's per-path fields. What goes where
differs by split format (``split.py``; ``Documents(version=)``).

This runs for every record indexed and every record merged, so it is built
for speed without changing what it computes:

- the walk over a record follows a tree of ``_Path`` nodes (one per path met
  while writing the split), so a path's string, existence terms and kind
  are made once, not per record;
- a keyword leaf's whole contribution is computed once per (path, value)
  and cached on the path node: logs repeat hosts, users, ports and actions;
- typed fields are registered in the field map the first time a path shows
  a number, an IP address or text (in record order, the order a separate
  pass would give), so one walk both decides the split's fields and builds
  every document.

The plain definition, leaf by leaf, is in ``tests/storage/test_document.py``;
the test checks that both give the same documents.
"""

from __future__ import annotations

from typing import Any

from seclake.record.dataset import Dataset
from seclake.record.flatten import MAX_DEPTH
from seclake.record.value import as_number, ip_text, keyword, scalar_text
from seclake.storage.fieldmap import SEP, FieldMap, cut
from seclake.storage.shape import Shapes

# What a path is, by its name alone (the dataset decides).
TIME, TEXT, DATE, KEYWORD = range(4)
_SCALARS = (str, int, float, bool)
_UNSET = object()


class _Path:
    """One record path: its existence terms, its kind, its analyzed values."""

    __slots__ = ("path", "ex", "kind", "children", "values", "text_field")

    def __init__(self, path: str, dataset: Dataset):
        self.path = path
        parts = path.split(".")
        self.ex = tuple(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        if path == dataset.time_field:
            self.kind = TIME  # held by the fixed ``ts`` field
        elif dataset.is_text(path):
            self.kind = TEXT
        elif dataset.is_date(path):
            self.kind = DATE  # a keyword, but not default-field text
        else:
            self.kind = KEYWORD
        # Keys of objects below this path -> their nodes.
        self.children: dict[str, _Path] = {}
        # Value -> entry; strings and ints by themselves, other scalars by
        # (class, value): True == 1 == 1.0, but they index differently.
        self.values: dict[Any, tuple] = {}
        self.text_field: Any = _UNSET


# Cached (path, value) entries before the caches start over: bounds the
# memory of splits with many distinct values.
CACHE_LIMIT = 200_000
# Leaves of the record shapes (``_existence``) kept before that cache
# starts over; a shape of more than a hundredth of it is not kept.
SHAPE_LIMIT = 1_000_000


class Documents:
    """Builds the documents of one split and decides its field map as it goes.

    Compiled, this is a C type whose attributes ``document.pxd`` declares
    (setup.py, seclake/native.py): the walk reads path nodes and its sets,
    dicts and lists without the interpreter's lookups (1.27x per document).
    An attribute added here must be declared there too.
    """

    def __init__(self, dataset: Dataset, version: int = 2):
        """``version``: the split format (split.py). Format 1 puts text values
        with a field of their own in the default field ``all`` as well, and
        spells every facet term out as ``key \\0 spelling``. Format 3 gives
        a record one shape term (``sh``) instead of its existence terms
        (``shape.py``), numbered in ``shapes``."""
        self.dataset = dataset
        self.version = version
        self.shapes = Shapes() if version >= 3 else None
        # Format 2: the top-level text fields (the message) whose words make
        # keyword values found in them redundant in ``all`` (``_within``).
        self._messages = () if version == 1 else tuple(p for p in sorted(dataset.text_fields) if "." not in p)
        self.fields = FieldMap()
        self._root: dict[str, _Path] = {}
        self._nodes: list[_Path] = []
        self._cached = 0
        self._shapes: dict[tuple[_Path, ...], tuple[list[str], list[str] | None]] = {}
        self._shape_leaves = 0

    def document(self, source: dict[str, Any], docid: int, ts: int) -> dict[str, Any]:
        """The document of one record (as ``tantivy.Document.from_dict`` takes it)."""
        # Lists, not sets: a term twice in a record (a value repeated in a
        # list, two paths cut to one key) is indexed once all the same
        # (these fields keep no frequencies), and ~45 set inserts and a copy
        # per record cost more than the rare duplicate.
        kw: list[str] = []
        kt: list[str] = []
        fr: dict[str, str | None] = {}
        seen: list[_Path] = []  # the path of every leaf, in record order
        text: list[str] = []
        doc: dict[str, Any] = {}
        self._walk(source, self._root, "", 0, kw, kt, fr, seen, text, doc)
        for path in self._messages:
            message = source.get(path)
            if message.__class__ is str and message:
                text = _outside(text, message)
        doc["docid"] = docid
        doc["ts"] = ts
        doc["kw"] = kw
        if self.version >= 2:
            doc["kt"] = kt
            doc["fr"] = [t for t in fr.values() if t is not None]
        else:
            doc["fr"] = list(fr.values())
        ex, sh = self._existence(seen)
        doc["ex"] = ex
        if sh is not None:
            doc["sh"] = sh
        doc["all"] = text
        return doc

    def _existence(self, seen: list[_Path]) -> tuple[list[str], list[str] | None]:
        """The existence terms and the shape term (format 3) of a record whose
        leaves have the paths ``seen``: (terms, None) before format 3, ([],
        [shape]) in it, (terms, None) there too when the split's table of
        shapes is full.

        Records of one source have a few shapes (the same paths in the same
        order), so the terms are made once per shape: a union of ~40 terms
        per record was a tenth of the walk. The lists are shared by the
        documents of a shape (tantivy only reads them).
        """
        shape = tuple(seen)
        terms = self._shapes.get(shape)
        if terms is None:
            union: set[str] = set()
            for p in seen:
                union.update(p.ex)
            terms = (list(union), None)
            if self.shapes is not None and union:
                number = self.shapes.number(terms[0])
                if number is not None:
                    terms = ([], [number])
            if self._shape_leaves + len(shape) > SHAPE_LIMIT:
                self._shapes.clear()
                self._shape_leaves = 0
            if len(shape) <= SHAPE_LIMIT // 100:
                self._shapes[shape] = terms
                self._shape_leaves += len(shape)
        return terms

    def _walk(self, node: dict, children: dict, prefix: str, depth: int,
              kw: list, kt: list, fr: dict, seen: list, text: list, doc: dict) -> None:
        for key, value in node.items():
            p = children.get(key)
            if p is None:
                p = children[key] = _Path(prefix + key, self.dataset)
                self._nodes.append(p)
            cls = value.__class__
            # Fast path: a string or integer keyword, most leaves of a log
            # record (the general case, _leaf, computes the same).
            if (cls is str or cls is int) and p.kind is KEYWORD:
                e = p.values.get(value)
                if e is None:
                    e = self._entry(p, value, value)
                seen.append(p)
                kw.extend(e[0])
                if e[5]:
                    kt.extend(e[5])
                if e[1] not in fr:
                    fr[e[1]] = e[2]
                if e[3]:
                    for name, v in e[3]:
                        _put(doc, name, v)
                text.append(e[4])
            else:
                self._leaf(p, value, depth, kw, kt, fr, seen, text, doc)

    def _leaf(self, p: _Path, value: Any, depth: int,
              kw: list, kt: list, fr: dict, seen: list, text: list, doc: dict) -> None:
        # The cases and depth rules of record.flatten.leaves, on path nodes.
        if value is None:
            return
        cls = value.__class__
        if cls is dict:
            if depth < MAX_DEPTH:
                self._walk(value, p.children, p.path + ".", depth + 1, kw, kt, fr, seen, text, doc)
            return
        if cls is list or cls is tuple:
            if depth < MAX_DEPTH:
                for item in value:
                    self._leaf(p, item, depth + 1, kw, kt, fr, seen, text, doc)
            return
        if not (cls is str or cls is int or cls is float or cls is bool):
            if isinstance(value, dict):
                if depth < MAX_DEPTH:
                    self._walk(value, p.children, p.path + ".", depth + 1, kw, kt, fr, seen, text, doc)
                return
            if isinstance(value, (list, tuple)):
                if depth < MAX_DEPTH:
                    for item in value:
                        self._leaf(p, item, depth + 1, kw, kt, fr, seen, text, doc)
                return
            if not isinstance(value, _SCALARS):
                return
        seen.append(p)
        kind = p.kind
        if kind is TIME:
            return
        if kind is TEXT:
            name = p.text_field
            if name is _UNSET:
                self.fields.add_text(p.path)
                name = p.text_field = self.fields.texts.get(p.path)
            spelled = scalar_text(value)
            if name is None or self.version == 1:
                text.append(spelled)
            if name is not None:
                _put(doc, name, spelled)
            return
        vkey = value if cls is str or cls is int else (cls, value)
        e = p.values.get(vkey)
        if e is None:
            e = self._entry(p, value, vkey)
        kw.extend(e[0])
        kt.extend(e[5])
        if e[1] not in fr:
            fr[e[1]] = e[2]
        for name, v in e[3]:
            _put(doc, name, v)
        if kind is KEYWORD:
            text.append(e[4])

    def _entry(self, p: _Path, value: Any, vkey: Any) -> tuple:
        """(keyword terms, facet key, facet term, typed values, spelling, text terms) of a keyword leaf.

        Format 1: the keyword terms are the keyword and the lowercased text
        (``keyword_terms``), and the facet term of every value is ``key \\0
        spelling``: one per (path, keyword) and record, the first spelling
        seen, so facet counts stay exact.

        Format 2: one term per value in ``kw``, its keyword, which facets
        count; the lowercased text, where it differs (numbers written
        otherwise: ``0443``, ``1.50``), in ``kt`` for patterns and ranges;
        and a facet term (None here) only for a value not spelled as its
        keyword (``Deny``), to show that spelling. Most values are spelled
        as their keyword, so the family of facet terms was nearly a copy of
        ``kw``: a third of a split's index.
        """
        path = p.path
        prefix = path + SEP
        cls = value.__class__
        # keyword_terms(value) is {keyword(value), scalar_text(value).lower()};
        # for the common classes it is spelled out, normalizing only once.
        if cls is int:
            spelling = norm = lower = str(value)  # an int's text, canonical number and keyword
            number = as_number(value)
        elif cls is str:
            spelling = value
            lower = value.lower()
            number = as_number(value)
            # A string that is not a number (up to 64 characters, as_number's
            # limit) is its own lowercased keyword: keyword() would try the
            # number pattern twice more to find that out.
            norm = lower if number is None and len(value) <= 64 else keyword(value)
        else:
            spelling = scalar_text(value)
            norm = keyword(value)
            lower = spelling.lower()
            number = as_number(value)
        facet_key = cut(prefix + norm)
        typed = []
        if number is not None:
            self.fields.add_number(path)
            name = self.fields.numbers.get(path)
            if name is not None:
                typed.append((name, number))
        ip = ip_text(value) if cls is not int else None
        if ip is not None:
            self.fields.add_ip(path)
            name = self.fields.ips.get(path)
            if name is not None:
                typed.append((name, ip))
        if self.version == 1:
            entry = (
                tuple({facet_key, cut(prefix + lower)}),
                facet_key,
                facet_key + SEP + spelling,
                tuple(typed),
                spelling,
                (),
            )
        else:
            plain = spelling == norm and SEP not in norm and len(facet_key) == len(prefix) + len(norm)
            entry = (
                (facet_key,),  # the keyword's term is the facet key
                facet_key,
                None if plain else facet_key + SEP + spelling,
                tuple(typed),
                spelling,
                () if lower == norm else (cut(prefix + lower),),
            )
        if self._cached >= CACHE_LIMIT:
            for node in self._nodes:
                node.values.clear()
            self._cached = 0
        self._cached += 1
        p.values[vkey] = entry
        return entry


def _put(doc: dict[str, Any], name: str, value: Any) -> None:
    """Add a value to a typed or text field of a document: the value alone
    while it is the field's only one, a list from the second on.
    ``Document.from_dict`` takes either; most fields of a record have one
    value, and a list for each (~20 per firewall record) was a fifth of the
    objects the walk made."""
    held = doc.get(name)
    if held is None:
        doc[name] = value
    elif held.__class__ is list:
        held.append(value)
    else:
        doc[name] = [held, value]


# Where the split's tokenizer (tantivy's simple one) ends a token. Only ASCII
# is judged: Python and Rust agree on it, not on every script. A set, not a
# function: ``_outside`` asks about four characters of each of ~30 values
# per record, and the calls were a fifth of the walk.
_EDGES = frozenset(chr(c) for c in range(128) if not chr(c).isalnum())


def _outside(values: list[str], message: str) -> list[str]:
    """Those of ``values`` not found in ``message`` at token boundaries.

    A value found there has its words in the message's words, in the same
    order and next to each other, so every term, phrase or pattern of the
    default field that matches the value matches the message too: it need
    not be indexed again in ``all`` (format 2). Most parsed log fields are
    cut from their message: a FortiGate record's 48 default-field values
    drop to a few. Only the first occurrence is looked at, so the work stays
    linear in the message whatever it holds; a value found first inside a
    longer word is kept (never wrong, only larger).
    """
    keep = []
    end_of = len(message)
    find = message.find
    for value in values:
        at = find(value)
        if at < 0 or not value:
            keep.append(value)
            continue
        end = at + len(value)
        if not (at == 0 or message[at - 1] in _EDGES or value[0] in _EDGES):
            keep.append(value)
        elif not (end == end_of or message[end] in _EDGES or value[-1] in _EDGES):
            keep.append(value)
    return keep
