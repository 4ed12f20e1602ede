"""An index of the rules of one dataset: which rules a record can match at all.

Thousands of rules (SigmaHQ's Windows rules) must not each be tried on every
record. Most rules require something of a record that is cheap to look up
for all rules at once:

- a keyword at a keyword field (``event.code:1``, ``winlog.channel:Security``,
  Sigma's ``OriginalFileName: whoami.exe``): a dictionary lookup per keyword
  the record holds;
- a literal inside a keyword field's value (Sigma's ``Image|endswith:
  '\\whoami.exe'``, ``CommandLine|contains: ' -enc '``: a ``Wildcard`` or
  ``Contains`` node; its longest literal part): every literal of every rule
  on that field is searched at once by one RE2 set (``re2.Set``: linear in
  the value, whatever the number of literals).

A rule's *needs* are the gates of its selector's conjunction, each gate a
set of alternatives (an OR of children that all have gates). The index files
each rule under one gate, the most selective by a static guess (the
alternative shared by the most rules decides; a literal of fewer than 4
characters counts as shared by every rule), and checks its other gates
before its matcher. A rule with no gate (only negations, ranges, regexes...)
is tried on every record. Gates are necessary conditions of the matcher
(``query/matcher.py`` reads keyword paths by ``keyword_terms``: a keyword is
one of them, a pattern's literal part a substring of one), so the index
never changes what matches, only what is tried: tests/detect/test_ruleindex.py
checks this against every matcher on random rules and records.

Text paths, the default field and case-sensitive nodes give no gate (their
tokens and case are compared differently); ``query/gate.py`` gives the first
gate the same way for one rule.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import re2

from seclake.query import ast
from seclake.query.matcher import RecordView
from seclake.record.dataset import Dataset
from seclake.record.flatten import leaves
from seclake.record.value import keyword

log = logging.getLogger("seclake.detect")

# A literal this short is in too many values to tell rules apart (".exe").
SHORT_LITERAL = 4
# RE2 sets of every rule's literals on one field: their automaton's memory, at most.
SET_MEMORY = 64 << 20


@dataclass(frozen=True, order=True)
class Need:
    """One alternative of a gate: ``text`` is a keyword of ``path`` (``kind`` "k"),
    or a substring of one (``kind`` "s")."""

    kind: str
    path: str
    text: str


Gate = frozenset  # of Need: a record passes when one holds


def needs_of(node: ast.Node, dataset: Dataset) -> list[Gate]:
    """The gates every record ``node`` matches passes (a conjunction; [] for none)."""
    if isinstance(node, ast.Term):
        if node.path is None or dataset.is_text(node.path):
            return []
        # Uncased: keyword(value) among keyword_terms; cased: scalar_text equal, so lowered too.
        return [frozenset([Need("k", node.path, node.value.lower() if node.cased else keyword(node.value))])]
    if isinstance(node, ast.Wildcard):
        if node.path is None or node.cased or dataset.is_text(node.path):
            return []
        literals = [p[1:] for p in node.parts() if p.startswith("=")]
        if not literals:
            return []
        if len(literals) == 1 and len(node.parts()) == 1:  # no wildcard at all: a whole keyword term
            return [frozenset([Need("k", node.path, literals[0])])]
        return [frozenset([Need("s", node.path, max(literals, key=len))])]
    contains = getattr(ast, "Contains", None)
    if contains is not None and isinstance(node, contains):
        if node.path is None or node.cased or dataset.is_text(node.path) or not node.value:
            return []
        return [frozenset([Need("s", node.path, node.value.lower())])]
    if isinstance(node, ast.And):
        out: list[Gate] = []
        for child in node.children:
            out.extend(g for g in needs_of(child, dataset) if g not in out)
        return out
    if isinstance(node, ast.Or):
        alternatives: set[Need] = set()
        for child in node.children:
            gates = needs_of(child, dataset)
            if not gates:
                return []  # one way to match without any gate: the OR has none
            alternatives |= min(gates, key=_local_cost)
        return [frozenset(alternatives)]
    return []


def _local_cost(gate: Gate) -> tuple:
    # Within one OR branch, before any counts are known: literals and keywords
    # over pure counts; a gate of fewer, longer alternatives first.
    return (len(gate), -min(len(n.text) for n in gate))


class RuleIndex:
    """Rules (by their number, in order) filed by their gates."""

    def __init__(self, selectors: list[ast.Node], dataset: Dataset):
        self.size = len(selectors)
        needs = [needs_of(s, dataset) for s in selectors]
        shared: dict[Need, int] = {}
        for gates in needs:
            for need in {n for g in gates for n in g}:
                shared[need] = shared.get(need, 0) + 1

        def cost(gate: Gate) -> int:
            return max(self.size if n.kind == "s" and len(n.text) < SHORT_LITERAL else shared[n] for n in gate)

        self.always: list[int] = []  # rules without a gate
        self._keywords: dict[str, dict[str, list[int]]] = {}  # path -> keyword -> rules filed there
        self._literal_rules: dict[str, list[list[int]]] = {}  # path -> literal number -> rules filed there
        self._literals: dict[str, dict[str, int]] = {}  # path -> literal -> its number in the path's set
        # Each rule's other gates, as gate numbers; each gate as (keyword needs, literal needs).
        self._checks: list[tuple[int, ...]] = []
        # A gate's alternatives grouped by path: one look per path, not per alternative (Sigma's
        # pipelines write a field under three names, and a rule ORs dozens of values).
        self._gates: list[tuple[tuple[tuple[str, frozenset[str]], ...], tuple[tuple[str, frozenset[int]], ...]]] = []
        gate_numbers: dict[Gate, int] = {}
        for number, gates in enumerate(needs):
            for gate in gates:
                for n in gate:
                    if n.kind == "s":
                        lits = self._literals.setdefault(n.path, {})
                        lits.setdefault(n.text, len(lits))
            if not gates:
                self.always.append(number)
                self._checks.append(())
                continue
            primary = min(gates, key=lambda g: (cost(g), sorted(g)))
            for n in primary:
                if n.kind == "k":
                    self._keywords.setdefault(n.path, {}).setdefault(n.text, []).append(number)
                else:
                    filed = self._literal_rules.setdefault(n.path, [])
                    at = self._literals[n.path][n.text]
                    filed.extend([] for _ in range(at + 1 - len(filed)))
                    filed[at].append(number)
            checks = []
            for gate in gates:
                if gate is primary:
                    continue
                if gate not in gate_numbers:
                    gate_numbers[gate] = len(self._gates)
                    keywords: dict[str, set[str]] = {}
                    literals: dict[str, set[int]] = {}
                    for n in gate:
                        if n.kind == "k":
                            keywords.setdefault(n.path, set()).add(n.text)
                        else:
                            literals.setdefault(n.path, set()).add(self._literals[n.path][n.text])
                    self._gates.append((tuple((p, frozenset(k)) for p, k in sorted(keywords.items())),
                                        tuple((p, frozenset(x)) for p, x in sorted(literals.items()))))
                checks.append(gate_numbers[gate])
            self._checks.append(tuple(checks))
        self._sets: dict[str, re2.Set | None] = {path: _literal_set(path, lits) for path, lits in self._literals.items()}

    def candidates(self, view: RecordView) -> list[int]:
        """The rules ``view``'s record passes every gate of, in rule order."""
        # The paths the record has, from one walk over its leaves: a rule set of
        # Sigma rules names ~300 paths, and looking each up took most of the time.
        present = {path for path, _ in leaves(view.data)}
        found = _Found(self._sets, view, present)
        out = set(self.always)
        keyword_index = self._keywords
        for path in present.intersection(keyword_index):
            by_keyword = keyword_index[path]
            for kw in view.keywords(path):
                rules = by_keyword.get(kw)
                if rules:
                    out.update(rules)
        literal_index = self._literal_rules
        for path in present.intersection(literal_index):
            filed = literal_index[path]
            hits = found.literals(path)
            if hits is None:  # the set could not run: every rule filed there is a candidate
                for rules in filed:
                    out.update(rules)
                continue
            for at in hits:
                if at < len(filed):
                    out.update(filed[at])
        checks, gates = self._checks, self._gates
        passed: dict[int, bool] = {}
        kept = []
        for number in sorted(out):
            ok = True
            for g in checks[number]:
                got = passed.get(g)
                if got is None:
                    got = passed[g] = _passes(gates[g], view, found, present)
                if not got:
                    ok = False
                    break
            if ok:
                kept.append(number)
        return kept

    def stats(self) -> dict[str, int]:
        """How the rules are filed (docs/rules.md's figures)."""
        return {"rules": self.size, "always": len(self.always),
                "keywordPaths": len(self._keywords), "literalPaths": len(self._literal_rules),
                "literals": sum(len(x) for x in self._literals.values())}


class _Found:
    """Per record: which literals each field's values hold (one RE2 set search per value)."""

    __slots__ = ("sets", "view", "present", "got")

    def __init__(self, sets: dict[str, re2.Set | None], view: RecordView, present: set[str]):
        self.sets, self.view, self.present, self.got = sets, view, present, {}

    def literals(self, path: str) -> set[int] | None:
        if path in self.got:
            return self.got[path]
        s = self.sets.get(path)
        hits: set[int] | None = None
        if path not in self.present:
            hits = set()
        elif s is not None:
            hits = set()
            try:
                for term in self.view.keywords(path):
                    hits.update(s.Match(term) or ())
            except re2.error:  # the automaton ran out of memory on this value: let the matchers decide
                hits = None
        self.got[path] = hits
        return hits


def _passes(gate, view: RecordView, found: _Found, present: set[str]) -> bool:
    keywords, literals = gate
    for path, wanted in keywords:
        if path in present and not wanted.isdisjoint(view.keywords(path)):
            return True
    for path, wanted in literals:
        if path in present:
            hits = found.literals(path)
            if hits is None or not wanted.isdisjoint(hits):
                return True
    return False


def _literal_set(path: str, literals: dict[str, int]) -> re2.Set | None:
    options = re2.Options()
    options.max_mem = SET_MEMORY
    s = re2.Set.SearchSet(options)
    for text, _at in sorted(literals.items(), key=lambda kv: kv[1]):
        s.Add(re2.escape(text))  # added in number order: Match answers these numbers
    try:
        s.Compile()
    except re2.error as e:  # every rule filed on the path is then a candidate
        log.warning("the rule index cannot search the %d literals of %s at once (%s)", len(literals), path, e)
        return None
    return s
