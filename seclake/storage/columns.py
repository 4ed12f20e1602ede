"""Columns of a split: the values of one record path, typed, one row per stored record.

An analytics query (docs/analytics.md, "Speed") reads a few paths of every
record its head selects. Decoding each stored record for them costs 4-28 µs
a record; a column holds the values a path has in every record of a split,
in the record store's order (docId ascending), typed, so the evaluator
(``analytics/columnar.py``) works on arrays.

A row's value is what the reader hands the row evaluator for that path
(``flatten.values_at`` of the record: none, one scalar, or several), kept by
kind, so the two evaluators read the same values:

- ``kinds`` (uint8): ``MISSING`` (no value: absent or null), ``INT`` (a JSON
  integer within int64), ``FLOAT``, ``STR``, ``OTHER`` (a boolean, several
  values, an integer past int64: what the columnar evaluator does not
  take; a query reading such a column runs on the row path);
- ``ints`` (int64), ``floats`` (float64): the numbers, where their kind is;
- ``codes`` (int32) into ``strings``: strings dictionary-encoded, case kept
  (a keyword's groups are exact); -1 elsewhere;
- ``numbers`` (uint8): ``INT`` or ``FLOAT`` where the row's value is a number
  as the row evaluator reads one (``scalars.number``: a number, or a string
  that writes one, FortiGate's ``sentbyte="198"``), its value in ``ints`` or
  ``floats`` (a string's too), else ``MISSING``; None when no string writes a
  number (then it is ``kinds``' numbers).

What a value means (which strings write numbers, how a stored record is
decoded for a few paths) is the analytics layer's: it hands its functions in
(``Reading``), so this storage module imports nothing above it.

Splits are immutable, so a column computed once is valid for the split's
life: it is computed on first use (one pass over the record store, every
column a query lacks at once) and kept in the split's directory
(``columns/<digest of the path>/``, numpy files memory-mapped when read),
written in a staging directory renamed into place (atomic: a reader sees the
whole column or none; two queries computing one keep either). Not written at
build: which paths queries aggregate is not known then, and a column of every
path of every record would cost build CPU and disk for paths no query reads.
A split's directory that cannot be written (read-only) still gets its
columns, held for that query only. A merged split is a new split: its
columns come with its first query; old splits' go with their directory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seclake.record.flatten import values_at

log = logging.getLogger(__name__)

VERSION = 1
DIRECTORY = "columns"
# Entries of a split's columns directory at most (its docIds and columns): a query may name any
# path, and each kept column of a path the records hold costs up to ~22 bytes a record; past it a
# column is computed for its query and not kept.
MAX_KEPT = 256
STALE_SECONDS = 3600  # a staging directory this old was left by a process that died writing it
MISSING, INT, FLOAT, STR, OTHER = 0, 1, 2, 3, 4
CHECK_EVERY = 4096  # records computed between two calls of a reader's check (~50 ms)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class Reading:
    """How the reader reads values: ``decoder(paths)`` is a function of a stored record's JSON
    giving the record (pruned to those paths: ``analytics/projection.py``), ``number(v)`` the
    number a value is or writes, else None (``analytics/scalars.number``)."""

    decoder: Callable[[Sequence[str]], Callable[[bytes], dict]]
    number: Callable[[object], int | float | None]


@dataclass
class Column:
    """One path's values over rows (module doc). ``ints``, ``floats`` and ``codes`` are None
    when no row has their kind."""

    kinds: np.ndarray
    ints: np.ndarray | None
    floats: np.ndarray | None
    codes: np.ndarray | None
    strings: list[str]
    numbers: np.ndarray | None = None
    _other: bool | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.kinds)

    @property
    def other(self) -> bool:
        """Whether some row holds what the columnar evaluator does not take (module doc)."""
        if self._other is None:
            self._other = bool((self.kinds == OTHER).any())
        return self._other

    def take(self, index: np.ndarray) -> Column:
        """The rows at ``index`` (positions, or a boolean mask)."""
        return Column(self.kinds[index], None if self.ints is None else self.ints[index],
                      None if self.floats is None else self.floats[index],
                      None if self.codes is None else self.codes[index], self.strings,
                      None if self.numbers is None else self.numbers[index])

    def numeric(self) -> np.ndarray:
        """Per row: ``INT``, ``FLOAT`` (its number in ``ints``/``floats``), or ``MISSING`` (no number)."""
        if self.numbers is not None:
            return self.numbers
        return np.where((self.kinds == INT) | (self.kinds == FLOAT), self.kinds, MISSING).astype(np.uint8)


def column_of(values: Sequence[object], number: Callable[[object], int | float | None]) -> Column:
    """The column of ``values`` (one per row: what ``values_at`` found, a list of scalars);
    ``number`` as ``Reading.number``."""
    n = len(values)
    kinds = np.zeros(n, dtype=np.uint8)
    ints = np.zeros(n, dtype=np.int64)
    floats = np.zeros(n, dtype=np.float64)
    codes = np.full(n, -1, dtype=np.int32)
    numbers = np.zeros(n, dtype=np.uint8)
    numeric_text = False
    strings: dict[str, int] = {}
    for i, found in enumerate(values):
        if not found:
            continue
        if len(found) > 1:  # type: ignore[arg-type]
            kinds[i] = OTHER
            continue
        v = found[0]  # type: ignore[index]
        t = type(v)
        if t is str:
            kinds[i] = STR
            code = strings.get(v)
            if code is None:
                code = strings[v] = len(strings)
            codes[i] = code
            x = number(v)  # an integer (of at most 18 digits: scalars._INT), else a float
            if type(x) is int:
                numbers[i], ints[i], numeric_text = INT, x, True
            elif x is not None:
                numbers[i], floats[i], numeric_text = FLOAT, x, True
        elif t is int:
            if _I64_MIN <= v <= _I64_MAX:
                kinds[i] = numbers[i] = INT
                ints[i] = v
            else:
                kinds[i] = OTHER
        elif t is float and math.isfinite(v):
            kinds[i] = numbers[i] = FLOAT
            floats[i] = v
        elif v is None:
            continue
        else:
            kinds[i] = OTHER
    present = set(np.unique(kinds).tolist())
    if numeric_text:
        present.update(np.unique(numbers).tolist())
    return Column(kinds, ints if INT in present else None, floats if FLOAT in present else None,
                  codes if STR in present else None, list(strings), numbers if numeric_text else None)


def of_records(records: Iterable[dict], paths: Sequence[str], number: Callable[[object], int | float | None]) -> dict[str, Column]:
    """Columns of ``paths`` over records already decoded (nested, as stored)."""
    found: dict[str, list] = {p: [] for p in paths}
    for record in records:
        for p in paths:
            found[p].append(values_at(record, p))
    return {p: column_of(v, number) for p, v in found.items()}


@dataclass
class SplitColumns:
    """The columns of one split's paths, in its record store's order, and its docIds."""

    docids: np.ndarray
    columns: dict[str, Column]
    computed: int = 0  # of them, computed now (the others were kept)


def _name(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()[:32]


# Columns opened lately, by split directory and path: opening one is a few files (its arrays
# mapped, its strings decoded: ~2 ms a query over 7 splits), and a split's columns never change.
# Bounded by entries; an entry holds its strings and the mappings of its arrays (of a split
# deleted meanwhile, its files' space until the entry goes).
OPENED = 2048
_opened: OrderedDict[tuple[str, str], object] = OrderedDict()
_opened_lock = threading.Lock()


def _cached(key: tuple[str, str], load):
    with _opened_lock:
        found = _opened.get(key)
        if found is not None:
            _opened.move_to_end(key)
            return found
    found = load()
    if found is not None:
        with _opened_lock:
            _opened[key] = found
            while len(_opened) > OPENED:
                _opened.popitem(last=False)
    return found


def read(split, paths: Sequence[str], reading: Reading, check: Callable[[], None] | None = None) -> SplitColumns:
    """The columns of ``paths`` of an open split (format 2 or later: a record store),
    computed and kept for the ones it lacks (module doc); ``check`` is called every
    ``CHECK_EVERY`` records computing them (a query's deadline and cancel: it raises)."""
    store = split.store
    assert store is not None
    base = Path(split.path) / DIRECTORY
    columns: dict[str, Column] = {}
    lacking = []
    for path in paths:
        loaded = _cached((str(base), path), lambda: _load(base / _name(path), path))
        if loaded is None:
            lacking.append(path)
        else:
            columns[path] = loaded
    docids = _cached((str(base), ""), lambda: _load_docids(base))
    if lacking or docids is None:
        docids, made = _compute(store, lacking, reading, check)
        columns.update(made)
        _save_docids(base, docids)
        for path in lacking:
            _save(base, path, made[path])
    return SplitColumns(docids, columns, len(lacking))


def _load(directory: Path, path: str) -> Column | None:
    try:
        meta = json.loads((directory / "column.json").read_text())
        if meta.get("version") != VERSION or meta.get("path") != path:
            return None
        arrays = {name: _mapped(directory / f"{name}.npy") if name in meta["arrays"] else None
                  for name in ("kinds", "ints", "floats", "codes", "numbers")}
        if arrays["kinds"] is None:  # no record holds the path
            arrays["kinds"] = np.zeros(int(meta["rows"]), dtype=np.uint8)
        strings = json.loads((directory / "strings.json").read_text()) if arrays["codes"] is not None else []
    except (OSError, ValueError, KeyError):
        return None
    return Column(arrays["kinds"], arrays["ints"], arrays["floats"], arrays["codes"], strings, arrays["numbers"])


def _mapped(file: Path) -> np.ndarray:
    """The array of ``file``, memory-mapped, as a plain ndarray over the mapping (which it keeps
    open): np.memmap's own indexing and ufunc wrapping cost ~10 µs a call, and a query over
    the 2M bench's 7 days made ~70 such calls a split."""
    return np.asarray(np.load(file, mmap_mode="r"))


def _load_docids(base: Path) -> np.ndarray | None:
    try:
        return _mapped(base / "docids.npy")
    except (OSError, ValueError):
        return None


def _compute(store, paths: Sequence[str], reading: Reading,
             check: Callable[[], None] | None = None) -> tuple[np.ndarray, dict[str, Column]]:
    docids = []
    found: dict[str, list] = {p: [] for p in paths}
    if not paths:  # the docIds alone: blocks decompressed, no record decoded
        docids = [d for d, _ in store]
    else:
        decode = reading.decoder(paths)
        for i, (docid, body) in enumerate(store):
            if check is not None and i % CHECK_EVERY == 0:
                check()  # nothing is kept of a column not computed whole
            docids.append(docid)
            record = decode(body)
            for p in paths:
                found[p].append(values_at(record, p))
    return np.asarray(docids, dtype=np.uint64), {p: column_of(v, reading.number) for p, v in found.items()}


def _save_docids(base: Path, docids: np.ndarray) -> None:
    final = base / "docids.npy"
    if final.exists():
        return
    staging = base / f".staging-{uuid.uuid4().hex}.npy"
    try:
        base.mkdir(exist_ok=True)  # not its parents: a split deleted meanwhile (merged, retired) stays gone
        np.save(staging, docids)
        os.replace(staging, final)
    except OSError as e:
        log.warning("the docIds of split %s could not be kept (%s): read again next time", base.parent, e)
        staging.unlink(missing_ok=True)


def _save(base: Path, path: str, column: Column) -> None:
    final = base / _name(path)
    try:
        kept = 0
        for entry in os.scandir(base):
            if not entry.name.startswith(".staging-"):
                kept += 1
            elif entry.stat(follow_symlinks=False).st_mtime < time.time() - STALE_SECONDS:
                shutil.rmtree(entry.path, ignore_errors=True)  # a process that died writing it
        if kept >= MAX_KEPT:
            log.info("split %s keeps %d columns already: the one of %r is not kept", base.parent, MAX_KEPT, path[:200])
            return
    except OSError:
        pass  # no columns yet
    staging = base / f".staging-{uuid.uuid4().hex}"
    try:
        base.mkdir(exist_ok=True)  # not its parents (as above)
        staging.mkdir()
        arrays = {"kinds": column.kinds, "ints": column.ints, "floats": column.floats,
                  "codes": column.codes, "numbers": column.numbers}
        # A path no record of the split holds (a query may name any) is kept as its row count alone.
        kept = [name for name, a in arrays.items() if a is not None] if column.kinds.any() else []
        for name in kept:
            np.save(staging / f"{name}.npy", arrays[name])
        if column.codes is not None:
            (staging / "strings.json").write_text(json.dumps(column.strings))
        (staging / "column.json").write_text(json.dumps({"version": VERSION, "path": path, "arrays": kept,
                                                         "rows": len(column)}))
        try:
            os.rename(staging, final)
        except OSError:
            if not final.exists():
                raise
            # Another query kept the same column first: the same values.
    except OSError as e:
        log.warning("a column of split %s could not be kept (%s): computed again next time", base.parent, e)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
