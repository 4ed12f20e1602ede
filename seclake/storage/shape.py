"""Record shapes: which paths a record has, kept once per split (format 3).

A search asks whether a record has a path (``_exists_:path``, sorting on a
field some records lack) and the field catalog counts records per path.
Formats 1 and 2 answer both with an existence term per path and parent in
every document (``ex``): about 38 terms per log record, as many as its
keywords, and a sixth of the CPU of building a split (measured on the
benchmark's records: 135 against 112 us per record without them).

Records of one source have a few shapes, the same set of paths, so format 3
numbers each distinct set in the split's ``split.json`` and gives a record
one term instead, its shape's number (field ``sh``). ``_exists_:path`` is
the set of shapes holding the path; the catalog counts records per shape and
adds each count to the shape's paths. A split of hostile records, every one
of another shape, must not grow ``split.json`` without bound: past
``MAX_SHAPES`` shapes or ``MAX_MEMBERS`` paths in all, records of new shapes
get their existence terms as before, and queries ask both fields.
"""

from __future__ import annotations

from collections.abc import Iterable

# Bounds of one split's table (its share of split.json: ~6 bytes a member).
MAX_SHAPES = 1024
MAX_MEMBERS = 100_000


class Shapes:
    """The numbered path sets of one split, built while writing it and read back with it."""

    def __init__(self, paths: list[str] | None = None, sets: list[list[int]] | None = None, spilled: bool = False):
        # Every path of any shape, numbered by first appearance.
        self.paths: list[str] = paths or []
        # Shape number -> the numbers of its paths.
        self.sets: list[list[int]] = sets or []
        # Whether some records carry existence terms instead (the table was full).
        self.spilled = spilled
        self._path_numbers = {p: i for i, p in enumerate(self.paths)}
        self._numbers: dict[frozenset[str], int] = {}
        self._members = sum(len(s) for s in self.sets)
        self._having: dict[str, list[str]] | None = None
        self._leaves: dict[str, bool] = {}  # only_leaves_at's answers (a table read back is not written to)

    # -- writing -----------------------------------------------------------

    def number(self, terms: list[str]) -> str | None:
        """The ``sh`` term of a record whose existence terms are ``terms``;
        None when the table is full (the record keeps ``terms`` instead)."""
        key = frozenset(terms)
        n = self._numbers.get(key)
        if n is None:
            if len(self.sets) >= MAX_SHAPES or self._members + len(key) > MAX_MEMBERS:
                self.spilled = True
                return None
            numbers = self._path_numbers
            members = []
            for path in sorted(key):
                i = numbers.get(path)
                if i is None:
                    i = numbers[path] = len(self.paths)
                    self.paths.append(path)
                members.append(i)
            n = self._numbers[key] = len(self.sets)
            self.sets.append(members)
            self._members += len(members)
        return str(n)

    def to_json(self) -> dict:
        return {"paths": self.paths, "sets": self.sets, "spilled": self.spilled}

    @classmethod
    def from_json(cls, data: dict) -> Shapes:
        paths, sets = data["paths"], data["sets"]
        if not all(0 <= i < len(paths) for s in sets for i in s):
            raise ValueError("a record shape names a path the split does not list")
        return cls(list(paths), [list(s) for s in sets], bool(data.get("spilled")))

    # -- reading -----------------------------------------------------------

    def having(self, path: str) -> list[str]:
        """The ``sh`` terms of the shapes that hold ``path``."""
        having = self._having
        if having is None:
            having = {}
            for n, members in enumerate(self.sets):
                term = str(n)
                for i in members:
                    having.setdefault(self.paths[i], []).append(term)
            self._having = having  # built once per split; a race builds it twice, equal
        return having.get(path, [])

    def only_leaves_at(self, path: str) -> bool:
        """Whether every record of the split is in the table (not spilled) and none holds
        anything below ``path`` (an object there): then ``path`` exists in a record exactly when
        a non-null scalar lies at it (what a column of ``path`` holds: service/columnscan.py)."""
        leaves = self._leaves.get(path)
        if leaves is None:
            below = path + "."
            if len(self._leaves) >= 256:  # any path may be asked: kept for the latest few
                self._leaves.clear()
            leaves = self._leaves[path] = not self.spilled and not any(p.startswith(below) for p in self.paths)
        return leaves

    def count_paths(self, shape_counts: Iterable[tuple[str, int]], into: dict[str, int]) -> dict[str, int]:
        """Add to ``into`` the records per path of (``sh`` term, records) counts."""
        paths, sets = self.paths, self.sets
        for term, n in shape_counts:
            if n > 0:
                for i in sets[int(term)]:
                    path = paths[i]
                    into[path] = into.get(path, 0) + n
        return into
