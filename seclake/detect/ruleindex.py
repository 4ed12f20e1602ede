"""An index of the rules of one dataset: which rules a record can match at all.

Thousands of rules (SigmaHQ's Windows rules) must not each be tried on every
record. Most rules require something of a record that is cheap to look up
for all rules at once:

- a keyword at a keyword field (``event.code:1``, ``winlog.channel:Security``,
  Sigma's ``OriginalFileName: whoami.exe``): a dictionary lookup per keyword
  the record holds;
- a field present at all (``Exists``: Sigma's log sources written as ``_exists_``,
  CloudTrail's ``eventSource``, a syslog line's ``program``, a DNS query's
  name): the matcher's own test, once per path and record, not per rule;
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

- a substring of a text field's or the default field's lowercased text
  (Sigma's field-less keywords, ``Contains`` on no path): the matcher's own
  test (``needle in low for low in lowered(path)``), searched by one RE2 set
  per path for all rules at once. Lowering every text of a record costs more
  than a keyword lookup, so such a gate is only checked, never the one a rule
  is filed under when it has another (a Linux keyword rule is filed under
  its log source, ``program`` present, and checked by its keywords).

Text terms (tokens), wildcards on text and case-sensitive nodes give no gate
(their tokens and case are compared differently); ``query/gate.py`` gives the
first gate the same way for one rule.
"""

from __future__ import annotations

import logging
import re
import weakref
from dataclasses import dataclass

import re2

from seclake.query import ast
from seclake.query.matcher import RecordView
from seclake.record.dataset import Dataset
from seclake.record.flatten import exists_at
from seclake.record.value import keyword

log = logging.getLogger("seclake.detect")

# A literal this short is in too many values to tell rules apart (".exe").
SHORT_LITERAL = 4
# RE2 sets of every rule's literals on one field: their automaton's memory, at most.
SET_MEMORY = 64 << 20


@dataclass(frozen=True, order=True)
class Need:
    """One alternative of a gate: ``text`` is a keyword of ``path`` (``kind`` "k"),
    or a substring of one (``kind`` "s"); a substring of the lowercased text of a text
    field or of the default field, ``path`` "" (``kind`` "t"); or ``path`` exists
    (``kind`` "e", no text)."""

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
    if isinstance(node, ast.Regex):
        # Sigma's |re searches each value's text (scalar_text), as a Contains reads it: a literal
        # every match holds is a substring of the value, so of its lowercased text (ASCII only).
        literal = required_literal(node.pattern) if node.flavor == "re2" else ""
        if not literal:
            return []
        if node.path is None or dataset.is_text(node.path):
            return [frozenset([Need("t", node.path or "", literal)])]
        return [frozenset([Need("s", node.path, literal)])]
    if isinstance(node, ast.Exists):
        # Checked with exists_at, the matcher's own test: exact whatever the path (text, an object's prefix).
        return [frozenset([Need("e", node.path, "")])] if node.path else []
    contains = getattr(ast, "Contains", None)
    if contains is not None and isinstance(node, contains):
        if node.cased or not node.value:
            return []
        if node.path is None or dataset.is_text(node.path):
            return [frozenset([Need("t", node.path or "", node.value.lower())])]
        return [frozenset([Need("s", node.path, node.value.lower())])]
    if isinstance(node, ast.And):
        out: list[Gate] = []
        for child in node.children:
            out.extend(g for g in needs_of(child, dataset) if g not in out)
        return out
    if isinstance(node, ast.Or):
        alternatives: set[Need] = set()
        branches: list[list[Gate]] = []
        for child in node.children:
            gates = needs_of(child, dataset)
            if not gates:
                return []  # one way to match without any gate: the OR has none
            alternatives |= min(gates, key=_local_cost)
            branches.append(gates)
        out = [frozenset(alternatives)]
        # A keyword field every branch needs is a gate of the OR too. Sigma's process creation is event 1
        # on Sysmon's channel or 4688 on Security's: gated by the channels alone, the ~1,100 process-creation
        # rules were split by channel only, and those without another gate ran on every Sysmon event
        # (network connections, file creations...); gated by the codes too, the index splits by them next.
        shared = set.intersection(*({p for g in gates if (p := _keyword_path(g)) is not None} for gates in branches))
        for path in sorted(shared):
            gate = frozenset().union(*(min((g for g in gates if _keyword_path(g) == path), key=lambda g: (len(g), sorted(g)))
                                       for gates in branches))
            if gate not in out:
                out.append(gate)
        return out
    return []


def _local_cost(gate: Gate) -> tuple:
    # Within one OR branch, before any counts are known: the gate whose weakest alternative is the
    # most telling (a keyword; a literal by its length, up to 8 characters; an existence the least),
    # then fewer, longer alternatives. By the number of alternatives first, SigmaHQ's EDR-Freeze
    # rule (an image named edr-freeze that ends in .exe, or one of 8 import hashes) was gated by
    # ".exe" (4 paths), which every process start holds, not by its names (8 paths).
    return (-min(_strength(n) for n in gate), len(gate), -min(len(n.text) for n in gate))


def _strength(need: Need) -> int:
    return 0 if need.kind == "e" else STRONG if need.kind == "k" else min(len(need.text), STRONG)


# A literal this long tells rules apart as well as a keyword does (OR branches' gates, above).
STRONG = 8


def required_literal(pattern: str) -> str:
    """The longest literal every match of the RE2 ``pattern`` holds, lowercased; "" when none is found.

    Our own scan, not RE2's: its prefilter (the literals it requires) is not exposed by the binding.
    It reads only what it is sure of and stops or gives up at anything else, so what it answers is
    a necessary condition of a match: a pattern with ``|`` anywhere gives nothing; the scan stops at
    the first group; a literal run ends at a class, ``.``, an anchor, an escape such as ``\\d``, a
    repeat (which drops the character it repeats unless it is ``+``). Only ASCII is kept, and under
    a leading ``(?i)`` neither k nor s (RE2 folds the Kelvin sign and the long s to them, which
    ``str.lower`` leaves as they are): the record's text is compared lowercased.
    """
    if "|" in pattern:
        return ""
    cased, i, n = True, 0, len(pattern)
    if pattern.startswith("(?"):
        close = pattern.find(")")
        flags = pattern[2:close]
        if close < 0 or not flags or not set(flags) <= set("imsU"):
            return ""
        cased, i = "i" not in flags, close + 1
    runs: list[str] = []
    run: list[str] = []
    literal_last = False  # the last token read is the run's last character (a repeat applies to it)
    while i < n:
        c = pattern[i]
        if c == "\\":
            d = pattern[i + 1:i + 2]
            if not d:
                return ""
            i += 2
            if d.isascii() and d.isalnum():
                if d not in _CLASS_ESCAPES:  # \x41, \p{L}, \Q...\E, octal: give up rather than misread
                    return ""
                c = ""
            else:
                c = d
        elif c in "*?{+":
            repeat = re.match(r"\{\d+(,\d*)?\}", pattern[i:]) if c == "{" else None
            if c == "{" and repeat is None:
                # RE2 reads it as a literal brace (``{,2}`` too): the scan stops rather than guess.
                if literal_last and run:
                    run.pop()
                break
            else:
                if c != "+" and literal_last and run:
                    run.pop()  # optional (or repeated) character
                i += len(repeat.group()) if repeat else 1
                if i < n and pattern[i] == "?":  # lazy
                    i += 1
                runs.append("".join(run))
                run, literal_last = [], False
                continue
        elif c == "(":
            break
        else:
            i += 1
            if c in "[.^$)]}":
                if c == "[":
                    break  # a class: its end is not worth parsing here
                c = ""
        if c and c.isascii() and (cased or c.lower() not in "ks"):
            run.append(c.lower())
            literal_last = True
        else:
            runs.append("".join(run))
            run, literal_last = [], False
    runs.append("".join(run))
    return max(runs, key=len)


_CLASS_ESCAPES = frozenset("dDsSwWbBAzntrfv")


# A group of rules this large is split by a keyword field all of them need (below).
PARTITION_MIN = 16


class RuleIndex:
    """Rules (by their number, in order) filed by their gates.

    First by their log source: most rules of a log source need one keyword
    field to hold one of a few values (``winlog.channel``, then ``event.code``;
    ``event.dataset``, ``observer.product``...). The rules are split by the
    field that the most of them need that way, each group by the next such
    field, recursively (a group of fewer than ``partition_min`` rules is not
    split): a record looks up its own values of that field in a dict and meets
    only the groups they name (a Sysmon process start: the ~1,100 rules of
    Sysmon's event 1; a DNS or FortiGate record: none of the Windows rules),
    and the gate that field gave is not checked again inside. Each group's
    rules are filed by their other gates as below (``_Flat``), the rules they
    share counted within the group, so the static guess sees which literal
    tells the process-creation rules apart, not which is rare among all.
    """

    def __init__(self, selectors: list[ast.Node], dataset: Dataset, partition_min: int = PARTITION_MIN):
        self.size = len(selectors)
        needs = [needs_of(s, dataset) for s in selectors]
        self._flats: list[_Flat] = []
        self._root = self._node(list(range(self.size)), {n: needs[n] for n in range(self.size)}, partition_min)

    def _node(self, rules: list[int], needs: dict[int, list[Gate]], partition_min: int):
        if len(rules) >= partition_min:
            counts: dict[str, int] = {}
            for r in rules:
                for path in {p for g in needs[r] if (p := _keyword_path(g)) is not None}:
                    counts[path] = counts.get(path, 0) + 1
            if counts:
                path, count = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
                if count >= partition_min:
                    groups: dict[str, list[int]] = {}
                    rest: list[int] = []
                    inner: dict[int, list[Gate]] = {}
                    for r in rules:
                        on_path = [g for g in needs[r] if _keyword_path(g) == path]
                        if not on_path:
                            rest.append(r)
                            continue
                        gate = min(on_path, key=lambda g: (len(g), sorted(g)))
                        # The group a record reaches through one of these keywords passed this gate.
                        inner[r] = [g for g in needs[r] if g is not gate]
                        for n in gate:
                            groups.setdefault(n.text, []).append(r)
                    nodes = {kw: self._node(members, inner, partition_min) for kw, members in groups.items()}
                    return _Partition(path, nodes, self._node(rest, needs, partition_min) if rest else None)
        flat = _Flat(rules, [needs[r] for r in rules], self.size)
        self._flats.append(flat)
        return flat

    def candidates(self, view: RecordView) -> list[int]:
        """The rules ``view``'s record passes every gate of, in rule order."""
        # The paths the record has, from one walk over its leaves: a rule set of
        # Sigma rules names ~300 paths, and looking each up took most of the time.
        present = view.paths()
        out: list[int] = []
        self._root.candidates(view, present, {}, out)
        if isinstance(self._root, _Flat):
            return out  # one flat group gives its rules once, in order
        return sorted(set(out))  # a rule in two groups of one field (event 1 or 4688) a record can reach both

    def stats(self) -> dict[str, int]:
        """How the rules are filed (docs/rules.md's figures): the flat groups' sums."""
        out = {"rules": self.size, "groups": len(self._flats)}
        for flat in self._flats:
            for k, v in flat.stats().items():
                out[k] = out.get(k, 0) + v
        return out


def _keyword_path(gate: Gate) -> str | None:
    """The keyword field all of a gate's alternatives are on, if there is one."""
    paths = {n.path for n in gate if n.kind == "k"}
    return next(iter(paths)) if len(paths) == 1 and all(n.kind == "k" for n in gate) else None


class _Partition:
    """Rules split by their keyword at ``path`` (the groups), and those that need none there (``rest``)."""

    __slots__ = ("path", "groups", "rest")

    def __init__(self, path: str, groups: dict, rest):
        self.path, self.groups, self.rest = path, groups, rest

    def candidates(self, view: RecordView, present: set[str], existing: dict[str, bool], out: list[int]) -> None:
        if self.path in present:
            groups = self.groups
            for kw in view.keywords(self.path):
                group = groups.get(kw)
                if group is not None:
                    group.candidates(view, present, existing, out)
        if self.rest is not None:
            self.rest.candidates(view, present, existing, out)


class _Flat:
    """Rules filed by their gates: ``numbers`` are their numbers in the index, in order."""

    def __init__(self, numbers: list[int], needs: list[list[Gate]], size: int):
        self.numbers = numbers
        self.size = size  # of the whole index: a short literal counts as shared by every rule
        shared: dict[Need, int] = {}
        for gates in needs:
            for need in {n for g in gates for n in g}:
                shared[need] = shared.get(need, 0) + 1

        def cost(gate: Gate) -> tuple[int, int]:
            # An existence is filed under only when the rule has no keyword or literal gate: the
            # matchers read the keywords of the fields the index looked up again (cached in the
            # view), an existence test is extra work (the starter pack: 21 -> 25 µs per record).
            # A text substring only when it has no other gate at all: it makes every record the group
            # meets lower and search its whole text (SigmaHQ's Linux keyword rules, filed under their
            # text before their log source's existence, did so for every FortiGate, DNS, proxy... line).
            return (max(2 if n.kind == "t" else n.kind == "e" for n in gate),
                    max(self.size if n.kind == "t" or (n.kind == "s" and len(n.text) < SHORT_LITERAL) else shared[n]
                        for n in gate))

        self.always: list[int] = []  # rules without a gate
        self._keywords: dict[str, dict[str, list[int]]] = {}  # path -> keyword -> rules filed there
        # Literal needs by key (_key: a keyword path, or TEXT + a text path): literal number -> rules filed there.
        self._literal_rules: dict[str, list[list[int]]] = {}
        self._literals: dict[str, dict[str, int]] = {}  # key -> literal -> its number in the key's set
        self._exists: dict[str, list[int]] = {}  # path -> rules filed on its existence
        # Each rule's other gates, as gate numbers; each gate as (keyword needs, literal needs, exists needs).
        self._checks: list[tuple[int, ...]] = []
        # A gate's alternatives grouped by path: one look per path, not per alternative (Sigma's
        # pipelines write a field under three names, and a rule ORs dozens of values).
        self._gates: list[tuple[tuple[tuple[str, frozenset[str]], ...], tuple[tuple[str, frozenset[int]], ...],
                                tuple[str, ...]]] = []
        gate_numbers: dict[Gate, int] = {}
        for number, gates in enumerate(needs):
            for gate in gates:
                for n in gate:
                    if n.kind in "st":
                        lits = self._literals.setdefault(_key(n), {})
                        lits.setdefault(n.text, len(lits))
            if not gates:
                self.always.append(number)
                self._checks.append(())
                continue
            primary = min(gates, key=lambda g: (cost(g), sorted(g)))
            for n in primary:
                if n.kind == "k":
                    self._keywords.setdefault(n.path, {}).setdefault(n.text, []).append(number)
                elif n.kind == "e":
                    self._exists.setdefault(n.path, []).append(number)
                else:
                    filed = self._literal_rules.setdefault(_key(n), [])
                    at = self._literals[_key(n)][n.text]
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
                    exists: set[str] = set()
                    for n in gate:
                        if n.kind == "k":
                            keywords.setdefault(n.path, set()).add(n.text)
                        elif n.kind == "e":
                            exists.add(n.path)
                        else:
                            literals.setdefault(_key(n), set()).add(self._literals[_key(n)][n.text])
                    self._gates.append((tuple((p, frozenset(k)) for p, k in sorted(keywords.items())),
                                        tuple((p, frozenset(x)) for p, x in sorted(literals.items())),
                                        tuple(sorted(exists))))
                checks.append(gate_numbers[gate])
            self._checks.append(tuple(checks))
        self._sets: dict[str, _LiteralSet | None] = {path: _literal_set(path, lits) for path, lits in self._literals.items()}
        self._text_keys = [k for k in self._literal_rules if k.startswith(TEXT)]

    def candidates(self, view: RecordView, present: set[str], existing: dict[str, bool], out: list[int]) -> None:
        """Adds the rules ``view``'s record passes every gate of to ``out``, in rule order."""
        found = _Found(self._sets, view, present, existing)
        kept = out
        out = set(self.always)
        keyword_index = self._keywords
        for path in present.intersection(keyword_index):
            by_keyword = keyword_index[path]
            for kw in view.keywords(path):
                rules = by_keyword.get(kw)
                if rules:
                    out.update(rules)
        for path, rules in self._exists.items():
            if found.exists(path):
                out.update(rules)
        literal_index = self._literal_rules
        searched = present.intersection(literal_index)
        if self._text_keys:  # text needs: no path to be present for (the default field is every record's)
            searched.update(self._text_keys)
        for path in searched:
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
        out_append = kept.append
        passed: dict[int, bool] = {}
        numbers = self.numbers
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
                out_append(numbers[number])

    def stats(self) -> dict[str, int]:
        return {"always": len(self.always),
                "keywordPaths": len(self._keywords), "literalPaths": len(self._literal_rules),
                "existsPaths": len(self._exists),
                "literals": sum(len(x) for x in self._literals.values())}


class _Found:
    """Per record: which literals each field's values hold (one RE2 set search per value)."""

    __slots__ = ("sets", "view", "present", "got", "existing")

    def __init__(self, sets: dict[str, _LiteralSet | None], view: RecordView, present: set[str],
                 existing: dict[str, bool]):
        # ``existing`` is the record's, shared by the groups it meets: an existence is one test per record.
        self.sets, self.view, self.present, self.got, self.existing = sets, view, present, {}, existing

    def exists(self, path: str) -> bool:
        got = self.existing.get(path)
        if got is None:
            got = self.existing[path] = exists_at(self.view.data, path)
        return got

    def literals(self, path: str) -> set[int] | None:
        if path in self.got:
            return self.got[path]
        s = self.sets.get(path)
        hits: set[int] | None = None
        text = path.startswith(TEXT)
        if not text and path not in self.present:
            hits = set()
        elif s is not None:
            automaton, joinable = s.automaton, s.joinable
            terms = self.view.lowered(path[1:] or None) if text else self.view.keywords(path)
            try:
                if joinable:  # one call for the record's ~20 texts (a keyword rule's default field)
                    hits = set(automaton.Match(JOIN.join(terms)) or ())
                else:
                    hits = set()
                    for term in terms:
                        hits.update(automaton.Match(term) or ())
            except re2.error:  # the automaton ran out of memory on this value: let the matchers decide
                hits = None
        self.got[path] = hits
        return hits


def _passes(gate, view: RecordView, found: _Found, present: set[str]) -> bool:
    keywords, literals, exists = gate
    for path, wanted in keywords:
        if path in present and not wanted.isdisjoint(view.keywords(path)):
            return True
    for path, wanted in literals:
        if path in present or path.startswith(TEXT):
            hits = found.literals(path)
            if hits is None or not wanted.isdisjoint(hits):
                return True
    for path in exists:
        if found.exists(path):
            return True
    return False


# Keys of text needs: TEXT + the path ("" the default field); no record path starts with it.
TEXT = "\0"


def _key(n: Need) -> str:
    return TEXT + n.path if n.kind == "t" else n.path


def _literal_set(path: str, literals: dict[str, int]) -> _LiteralSet | None:
    """The RE2 set of ``literals`` (Match answers their numbers), and whether it may search a path's
    values joined by JOIN; None when it cannot be compiled (every rule filed there is then a candidate)."""
    texts = tuple(text for text, _at in sorted(literals.items(), key=lambda kv: kv[1]))
    try:
        return _compiled(texts)
    except re2.error as e:
        log.warning("the rule index cannot search the %d literals of %s at once (%s)", len(literals),
                    path.replace(TEXT, "text ") or "the default field", e)
        return None


class _LiteralSet:
    __slots__ = ("automaton", "joinable", "__weakref__")

    def __init__(self, automaton: re2.Set, joinable: bool):
        self.automaton, self.joinable = automaton, joinable


# Compiling the sets is most of building an index (SigmaHQ's ~80,000 literals over its groups); a new
# generation of the rule book (a rule added, one disabled) is built while the last one is in use and
# leaves most groups' literals as they were: their sets are shared, not compiled again. Held weakly:
# a set goes with the last index using it (RE2's automatons are most of the rules' memory).
_compiled_sets: weakref.WeakValueDictionary[tuple[str, ...], _LiteralSet] = weakref.WeakValueDictionary()


def _compiled(texts: tuple[str, ...]) -> _LiteralSet:
    got = _compiled_sets.get(texts)
    if got is None:
        options = re2.Options()
        options.max_mem = SET_MEMORY
        s = re2.Set.SearchSet(options)
        for text in texts:
            s.Add(re2.escape(text))  # added in number order: Match answers these numbers
        s.Compile()
        # A literal without JOIN cannot match across one, so the values can be searched in one call.
        got = _compiled_sets[texts] = _LiteralSet(s, not any(JOIN in text for text in texts))
    return got


# Between the values of a path searched at once; no literal of that set holds it (else one by one).
JOIN = "\n"
