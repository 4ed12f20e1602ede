"""Pruning: skipping the splits a query cannot match, judged from their customers.

A split records the ``@customer`` signatures of its records
(``storage/customers.py``). The root asks, for each split, whether the
effective query (the user's query AND the caller's data policies) can be
true for a record with one of those signatures. The query tree is evaluated
three-valued, once per signature:

* a leaf on ``@customer`` is evaluated exactly, by the query matcher on a
  record holding just that signature's values (the matcher reads values
  with the same normalization indexing uses, and the engines obey the
  matcher: the conformance tests);
* every other leaf is unknown: it depends on more than the customer;
* ``And``/``Or``/``Not`` combine as in three-valued logic.

A split is skipped only when the query is certainly false for every
signature, so what is skipped could never have produced a hit. Anything the
evaluation cannot bound is unknown: regular expressions (linear in time
since RE2, but kept out: pruning is an optimisation), wildcards with more than
``MAX_STARS`` stars outside the shapes the matcher tests without a regex,
trees deeper than ``MAX_DEPTH``, more than ``MAX_NODES`` nodes, more than
``MAX_LEAVES`` customer leaves, a split whose customers are unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seclake.query import ast
from seclake.query.matcher import compile_matcher
from seclake.record.dataset import Dataset
from seclake.storage.customers import PATH, Customers, decode
from seclake.storage.split import meta_of

# Bounds on one evaluation; past any of them the split is searched.
MAX_DEPTH = 64
MAX_NODES = 4096
MAX_LEAVES = 64
MAX_STARS = 2

# Three values per signature: True, False, None (unknown).
Truth = tuple[bool | None, ...]
_EXACT = (ast.Term, ast.Range, ast.Exists, ast.Cidr)


class _GiveUp(Exception):
    """The evaluation went past a bound: every signature is unknown."""



def prune(splits: Sequence[Any], node: ast.Node, dataset: Dataset) -> list[Any]:
    """The splits ``node`` may match a record of, in their order."""
    verdicts: dict[Customers, bool] = {}
    kept = []
    for split in splits:
        customers = meta_of(split).customers
        may = verdicts.get(customers)
        if may is None:
            may = verdicts[customers] = may_match(node, customers, dataset)
        if may:
            kept.append(split)
    return kept


def may_match(node: ast.Node, customers: Customers, dataset: Dataset) -> bool:
    """False only when ``node`` is certainly false for every record with one of ``customers``."""
    if customers is None:
        return True
    if not customers:
        return False  # an empty split (none is ever written)
    try:
        truth = _Evaluation([decode(sig) for sig in customers], dataset).truth(node, 0)
    except _GiveUp:
        return True
    except Exception:
        # A shape nobody foresaw must cost a search, never the search.
        return True
    return any(t is not False for t in truth)


class _Evaluation:
    def __init__(self, records: list[dict[str, Any]], dataset: Dataset):
        self.records = records
        self.dataset = dataset
        self.unknown: Truth = (None,) * len(records)
        self.nodes = 0
        self.leaves = 0

    def truth(self, node: ast.Node, depth: int) -> Truth:
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise _GiveUp
        if isinstance(node, ast.And):
            return self._combine(node.children, depth, stop=False)
        if isinstance(node, ast.Or):
            return self._combine(node.children, depth, stop=True)
        if isinstance(node, ast.Not):
            return tuple(None if t is None else not t for t in self.truth(node.child, depth + 1))
        if isinstance(node, ast.MatchAll):
            return (True,) * len(self.records)
        if isinstance(node, ast.MatchNone):
            return (False,) * len(self.records)
        if getattr(node, "path", None) != PATH or not self._exact(node):
            return self.unknown
        self.leaves += 1
        if self.leaves > MAX_LEAVES:
            raise _GiveUp
        test = compile_matcher(node, self.dataset)
        return tuple(bool(test(r)) for r in self.records)

    def _combine(self, children: Sequence[ast.Node], depth: int, stop: bool) -> Truth:
        """And (``stop`` False: one False decides) or Or (``stop`` True: one True decides)."""
        out: list[bool | None] = [not stop] * len(self.records)
        for child in children:
            for i, t in enumerate(self.truth(child, depth + 1)):
                if out[i] is stop:
                    continue
                if t is stop:
                    out[i] = stop
                elif t is None:
                    out[i] = None
            if all(t is stop for t in out):
                break  # decided for every signature: the rest cannot change it
        return tuple(out)

    @staticmethod
    def _exact(node: ast.Node) -> bool:
        if isinstance(node, _EXACT):
            return True
        if isinstance(node, ast.Wildcard):
            # The matcher tests a*, *a and *a* with string methods; other
            # shapes by a backtracking regex, bounded here by the stars.
            return node.parts().count("*") <= MAX_STARS
        return False
