"""Do the engines agree? Counts, top ids at each offset, facet buckets and histogram buckets."""

from __future__ import annotations

from seclake.bench.classes import Answer


def differences(reference: Answer, other: Answer, *, limit: int = 5) -> list[str]:
    """What ``other`` answers differently from ``reference``, as readable lines (empty: they agree)."""
    out: list[str] = []
    if reference.total != other.total:
        out.append(f"total: {reference.total} != {other.total}")
    for offset in sorted(set(reference.pages) | set(other.pages)):
        a, b = reference.pages.get(offset), other.pages.get(offset)
        if a != b:
            if a is None or b is None:
                out.append(f"page at offset {offset}: {a} != {b}")
                continue
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            out.append(f"page at offset {offset}: first difference at position {i}: "
                       f"{a[i:i + limit]} != {b[i:i + limit]} (lengths {len(a)}, {len(b)})")
    for name in sorted(set(reference.facets) | set(other.facets)):
        a, b = reference.facets.get(name, []), other.facets.get(name, [])
        if [tuple(x) for x in a] != [tuple(x) for x in b]:
            da, db = dict(a), dict(b)
            diff = [f"{k}: {da.get(k)} != {db.get(k)}" for k in list(dict.fromkeys([*da, *db])) if da.get(k) != db.get(k)]
            order = "" if diff else " (same buckets, other order)"
            out.append(f"facet {name}{order}: " + "; ".join(diff[:limit]))
    if reference.histogram != other.histogram:
        da, db = dict(reference.histogram), dict(other.histogram)
        diff = [f"{k}: {da.get(k)} != {db.get(k)}" for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)]
        out.append(f"histogram ({len(da)} vs {len(db)} buckets): " + "; ".join(diff[:limit]))
    return out


class Agreement:
    """Collects every answer of every engine and reports each disagreement with the reference (HTTP)."""

    def __init__(self, reference: str = "http"):
        self.reference = reference
        self.answers: dict[str, dict[str, Answer]] = {}  # class -> engine -> first answer
        self.mismatches: list[str] = []
        self.checks = 0

    def add(self, qclass: str, engine: str, answer: Answer) -> None:
        mine = self.answers.setdefault(qclass, {})
        first = mine.setdefault(engine, answer)
        if first is not answer:  # the same engine must answer the same every time
            self._compare(qclass, f"{engine} (first answer)", first, f"{engine} (again)", answer)
        ref = mine.get(self.reference)
        if engine != self.reference and ref is not None:
            self._compare(qclass, self.reference, ref, engine, answer)
        elif engine == self.reference and first is answer:
            for other, a in mine.items():
                if other != engine:
                    self._compare(qclass, engine, answer, other, a)

    def _compare(self, qclass: str, name_a: str, a: Answer, name_b: str, b: Answer) -> None:
        self.checks += 1
        for line in differences(a, b):
            msg = f"{qclass}: {name_a} vs {name_b}: {line}"
            if msg not in self.mismatches:
                self.mismatches.append(msg)

    @property
    def ok(self) -> bool:
        return not self.mismatches
