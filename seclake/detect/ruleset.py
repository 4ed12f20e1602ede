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

import pickle
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from seclake.detect.rule import Rule
from seclake.query.gate import Gate, gate_of
from seclake.query.matcher import RecordView
from seclake.record.dataset import DATASETS

SOURCE_DATASETS = ("event", "flow")
_NO_RULES: tuple[list, list] = ([], [])


class RuleSet:
    def __init__(self, rules: Iterable[Rule], version: Any):
        self.version = version
        self.enabled = list(rules)
        # dataset -> (rules as (rule, its gate's number or -1), in rule order, the distinct gates).
        self._by_dataset: dict[str, tuple[list[tuple[Rule, int]], list[Gate]]] = {d: ([], []) for d in SOURCE_DATASETS}
        for rule in self.enabled:
            rules, gates = self._by_dataset.setdefault(rule.dataset, ([], []))
            gate = gate_of(rule.selector, rule.data)
            if gate is None:
                number = -1
            elif gate in gates:
                number = gates.index(gate)
            else:
                number = len(gates)
                gates.append(gate)
            rules.append((rule, number))

    def rules(self, dataset: str) -> list[tuple[Rule, int]]:
        return self._by_dataset.get(dataset, _NO_RULES)[0]

    def matching(self, dataset: str, record: dict[str, Any]) -> list[int]:
        """The numbers (in ``rules(dataset)``) of the rules whose selector matches ``record``, in rule order."""
        rules, gates = self._by_dataset.get(dataset, _NO_RULES)
        if not rules:
            return []
        # One view per record: every rule reads each path once.
        view = RecordView(record, DATASETS[dataset])
        # Each gate is looked at once per record, when a rule first needs it.
        passed: list[bool | None] = [None] * len(gates)
        out = []
        for n, (rule, number) in enumerate(rules):
            if number >= 0:
                ok = passed[number]
                if ok is None:
                    ok = passed[number] = gates[number].admits(view)
                if not ok:
                    continue
            if rule.matcher()(view):
                out.append(n)
        return out

    @cached_property
    def shipped(self) -> bytes:
        """The rule set as a worker receives it (pickled once per generation)."""
        return pickle.dumps((self.version, self.enabled))


# In a worker: the last rule set received, rebuilt only when the generation changes.
_received: RuleSet | None = None


def received(shipped: bytes, version: Any) -> RuleSet:
    """The rule set of ``shipped`` (``RuleSet.shipped``) of generation ``version``, kept between jobs."""
    global _received
    if _received is None or _received.version != version:
        shipped_version, rules = pickle.loads(shipped)
        _received = RuleSet(rules, shipped_version)
    return _received
