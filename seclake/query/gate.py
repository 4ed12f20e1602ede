"""A query's gate: a keyword field and keywords, one of which every record
the query matches holds there.

Streaming rules test every ingested record, and most rules start with a
term on a keyword field (``event.category:authentication``): a record
without that keyword fails the rule there. Rules sharing a gate are turned
away by one look at a record (``detect/detector.py``), where each rule's
own matcher took ~2 us to fail at the same term. The gate is only a
necessary condition: a record that passes it still runs the rule's matcher.
"""

from __future__ import annotations

from dataclasses import dataclass

from seclake.query import ast
from seclake.query.matcher import RecordView
from seclake.record.dataset import Dataset
from seclake.record.value import keyword


@dataclass(frozen=True)
class Gate:
    path: str
    keywords: frozenset[str]

    def admits(self, view: RecordView) -> bool:
        """Whether the record holds one of the keywords at the path (the matcher's term test)."""
        return not self.keywords.isdisjoint(view.keywords(self.path))


def gate_of(node: ast.Node, dataset: Dataset) -> Gate | None:
    """The gate of ``node`` as ``query/matcher.py`` reads it, or None when it has none.

    A keyword term is its own gate (the matcher's test: the normalized
    keyword among the value's keywords); an AND has the gate of its first
    child that has one; an OR has one when every child has a gate on the
    same field (the union of their keywords). Anything else (text, patterns,
    ranges, negations) has none.
    """
    if isinstance(node, ast.Term):
        if node.path is None or dataset.is_text(node.path):
            return None
        return Gate(node.path, frozenset([keyword(node.value)]))
    if isinstance(node, ast.And):
        for child in node.children:
            gate = gate_of(child, dataset)
            if gate is not None:
                return gate
        return None
    if isinstance(node, ast.Or):
        gates = [gate_of(child, dataset) for child in node.children]
        first = gates[0] if gates else None
        if first is None or any(g is None or g.path != first.path for g in gates):
            return None
        return Gate(first.path, frozenset().union(*(g.keywords for g in gates if g is not None)))
    return None
