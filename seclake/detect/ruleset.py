"""Which enabled rules match a record: the stateless half of detection.

The detector (``detect/detector.py``) keeps the stateful half (threshold
windows, history, the behavior counter) in the server's one process, in log
order. Whether a rule's selector matches a record depends on the rule and
the record only, so it can run anywhere: in the request thread, or in the
parse worker that made the record (``service/parsepool.py``), which sends
back each record's matching rules by number. A rule set is one generation
of the rule book (``version``): matches computed under another generation
are not used.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from seclake.detect.rule import Rule
from seclake.detect.ruleindex import RuleIndex
from seclake.query.matcher import RecordView
from seclake.record.dataset import DATASETS
from seclake.record.flatten import values_at
from seclake.record.value import keyword, scalar_text

log = logging.getLogger("seclake.detect")
SOURCE_DATASETS = ("event", "flow")
_NO_RULES: tuple[list, None] = ([], None)


class RuleSet:
    def __init__(self, rules: Iterable[Rule], version: Any):
        self.version = version
        self.enabled = list(rules)
        # rule name -> the enabled correlation rules referring to it (detect/correlation.py).
        self._correlations = _correlations(self.enabled)
        # (correlation, referenced rule, dataset) -> record paths of each group-by field, of its field.
        self._paths: dict[tuple[str, str, str], tuple[tuple[tuple[str, ...] | None, ...], tuple[str, ...]]] = {}
        # dataset -> (rules as (rule, its number), in rule order; their index: which a record can match).
        by_dataset: dict[str, list[Rule]] = {d: [] for d in SOURCE_DATASETS}
        for rule in self.enabled:
            if rule.correlation is None:  # a correlation has no selector: the rules it names feed it
                by_dataset.setdefault(rule.dataset, []).append(rule)
        self._by_dataset: dict[str, tuple[list[tuple[Rule, int]], RuleIndex | None]] = {
            d: ([(r, n) for n, r in enumerate(rules)], RuleIndex([r.selector for r in rules], DATASETS[d]))
            for d, rules in by_dataset.items()
        }

    def rules(self, dataset: str) -> list[tuple[Rule, int]]:
        return self._by_dataset.get(dataset, _NO_RULES)[0]

    def matching(self, dataset: str, record: dict[str, Any]) -> list[int]:
        """The numbers (in ``rules(dataset)``) of the rules whose selector matches ``record``, in rule order."""
        rules, index = self._by_dataset.get(dataset, _NO_RULES)
        if not rules:
            return []
        # One view per record: every rule reads each path once. The index
        # (detect/ruleindex.py) names the rules whose gates the record passes:
        # only those run their matcher.
        view = RecordView(record, DATASETS[dataset])
        assert index is not None
        return [n for n in index.candidates(view) if rules[n][0].matcher()(view)]

    def correlations_of(self, name: str) -> list[Rule]:
        """The enabled correlation rules that name rule ``name``."""
        return self._correlations.get(name, _NONE)

    def _paths_of(self, corr: Rule, name: str, dataset: str) -> tuple[tuple[tuple[str, ...] | None, ...],
                                                                          tuple[str, ...]]:
        at = (corr.name, name, dataset)
        paths = self._paths.get(at)
        if paths is None:
            c, data = corr.correlation, DATASETS[dataset]
            assert c is not None
            group = tuple(None if (f := c.field_of(g, name)) is None else _places(f, data) for g in c.group_by)
            paths = self._paths[at] = (group, _places(c.field, data) if c.field else ())
        return paths

    def group_values(self, corr: Rule, name: str, dataset: str, record: dict[str, Any]) -> list[str] | None:
        """The values of ``corr``'s group-by fields in a record of rule ``name`` (first non-empty value of
        each, as text, at the first of its places that has one); None when one is absent."""
        out = []
        for places in self._paths_of(corr, name, dataset)[0]:
            text = None if places is None else next(
                (t for path in places for t in map(scalar_text, values_at(record, path)) if t != ""), None)
            if text is None:
                return None
            out.append(text)
        return out

    def counted_value(self, corr: Rule, name: str, dataset: str, record: dict[str, Any]) -> str | None:
        """value_count's field in a record of rule ``name``: its first value's keyword; None when absent."""
        for path in self._paths_of(corr, name, dataset)[1]:
            for v in values_at(record, path):
                return keyword(v)
        return None

    @cached_property
    def shipped(self) -> bytes:
        """The rule set as a worker receives it (pickled once per generation)."""
        return pickle.dumps((self.version, self.enabled))


_NONE: list[Rule] = []
# A correlation's field may name several places, ``a|b``: the value is read at the first of them the
# record has (a Sigma field mapped for both shippers' records: seclake/sigma/correlation.py).
PLACES = "|"


def _places(field: str, data: Any) -> tuple[str, ...]:
    return tuple(data.resolve(f) for f in field.split(PLACES) if f)


def _correlations(rules: list[Rule]) -> dict[str, list[Rule]]:
    """Rule name -> the correlation rules naming it; a correlation that names
    itself through others (a cycle) is left out, with a warning."""
    named: dict[str, tuple[str, ...]] = {r.name: r.correlation.rules for r in rules if r.correlation is not None}
    # Kahn's order: a correlation is sound once every correlation it names is;
    # what is never sound is on a cycle or fed by one.
    sound: set[str] = set()
    waiting = dict(named)
    while True:
        ready = [n for n, refs in waiting.items() if all(r not in named or r in sound for r in refs)]
        if not ready:
            break
        for n in ready:
            sound.add(n)
            del waiting[n]
    out: dict[str, list[Rule]] = {}
    for rule in rules:
        if rule.correlation is None:
            continue
        if rule.name not in sound:
            log.warning("correlation rule %s refers to itself through %s: left out", rule.name,
                        ", ".join(rule.correlation.rules))
            continue
        for ref in rule.correlation.rules:
            out.setdefault(ref, []).append(rule)
    return out


# In a worker: the last rule set received, rebuilt only when the generation changes.
_received: RuleSet | None = None


def received(shipped: bytes, version: Any) -> RuleSet:
    """The rule set of ``shipped`` (``RuleSet.shipped``) of generation ``version``, kept between jobs."""
    global _received
    if _received is None or _received.version != version:
        shipped_version, rules = pickle.loads(shipped)
        _received = RuleSet(rules, shipped_version)
    return _received
