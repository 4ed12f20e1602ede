"""The query trees of stored Sigma rules, kept in the data dir between starts.

A Sigma rule is stored as its text and converted again whenever the rule
book reads it (``sigma/conversion.py``: what runs is always what pySigma
makes of the rule as written). Converting takes pySigma ~2-6 ms a rule, so a
start with all of SigmaHQ's ~3,300 rules spent ~20 s in it. The cache keeps
each text's tree, keyed by the text's digest, in one JSON file under the
data dir, valid only for the converter that made it: its ``version`` is a
digest of the modules that decide a tree (seclake's Sigma backend, log
sources, pipelines, the query tree, patterns, field names) and of pySigma's
version, so an upgrade or an edit converts every rule again, once.

It is a cache: a missing, unreadable or foreign file is converted anew (and
logged), never trusted past its version. JSON, not pickle: the file only
ever becomes query nodes of the types below.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
import logging
import os
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from seclake.query import ast

log = logging.getLogger("seclake.rules")

FILE = "sigma-trees.json"
# The node types a cached tree is made of (a name in the file that is not one of them: the file is not used).
_NODES = {cls.__name__: cls for cls in (ast.MatchAll, ast.MatchNone, ast.Term, ast.Wildcard, ast.Regex, ast.Contains,
                                         ast.FieldRef, ast.Range, ast.Exists, ast.Cidr, ast.And, ast.Or, ast.Not)}
# What decides the tree of a Sigma text, besides pySigma.
_SOURCES = ("sigma/backend.py", "sigma/conversion.py", "sigma/logsource.py", "sigma/pipeline.py",
            "sigma/unsupported.py", "query/ast.py", "query/pattern.py", "record/dataset.py")


@cache
def version() -> str:
    """The converter's digest: the modules that make a tree, and pySigma's version."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(metadata.version("pysigma").encode())
    for name in _SOURCES:
        h.update(name.encode() + b"\0" + (root / name).read_bytes())
    return h.hexdigest()[:32]


def encode(node: ast.Node) -> Any:
    """``node`` as JSON values: ``[type name, field...]``, child nodes the same way."""
    return [type(node).__name__, *(_value(getattr(node, f.name)) for f in dataclasses.fields(node))]


def _value(v: Any) -> Any:
    if type(v).__name__ in _NODES:
        return encode(v)
    if isinstance(v, tuple):
        return {"all": [_value(x) for x in v]}
    if isinstance(v, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return {"net": str(v)}
    return v  # str, int, float, bool, None


def decode(data: Any) -> ast.Node:
    """The node ``encode`` gave ``data`` for; ValueError for anything else."""
    if not isinstance(data, list) or not data or data[0] not in _NODES:
        raise ValueError(f"not a query node: {str(data)[:80]}")
    cls = _NODES[data[0]]
    return cls(*(_decoded(v) for v in data[1:]))


def _decoded(v: Any) -> Any:
    if isinstance(v, list):
        return decode(v)
    if isinstance(v, dict):
        if "all" in v:
            return tuple(_decoded(x) for x in v["all"])
        return ipaddress.ip_network(v["net"])
    return v


class TreeCache:
    """The trees of Sigma texts converted by earlier starts (the file) and by this process (the last read's).

    A read of every rule (``RuleBook.load``) calls ``begin``, ``selector`` for each Sigma rule, then ``save``.
    Only the last read's trees stay in memory (the rules hold them anyway), and the file's entries only
    while a read needs them.
    """

    def __init__(self, directory: Path):
        self.path = Path(directory) / FILE
        self._nodes: dict[str, ast.Node] = {}  # text digest -> tree, of the last read
        self._used: dict[str, ast.Node] = {}  # of the read under way
        self._file: dict[str, Any] | None = None  # the file's entries, while a read needs them
        self._on_disk: frozenset[str] | None = None  # the digests the file holds (None: not read yet)
        self.hits = self.misses = 0  # trees read from the file, rules converted

    def begin(self) -> None:
        self._used = {}

    def selector(self, text: str) -> ast.Node:
        """The Sigma rule's tree (``conversion.selector``), converted only when no start did before."""
        from seclake.sigma.conversion import selector

        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        node = self._nodes.get(key)
        if node is None:
            data = self._entries().get(key)
            if data is not None:
                try:
                    node = decode(data)
                    self.hits += 1
                except (ValueError, TypeError, KeyError, IndexError) as e:  # damaged: converted again
                    log.warning("the Sigma tree cache %s has a bad entry (%s): converting the rule again", self.path, e)
            if node is None:
                node = selector(text)  # Unsupported propagates: the rule book says why the rule cannot run
                self.misses += 1
        self._used[key] = node
        return node

    def save(self) -> None:
        """Keep the trees of the read just made (dropping those of rules gone); write them when they are not
        what the file holds."""
        self._nodes, self._used, self._file = self._used, {}, None
        if self._on_disk == self._nodes.keys() or (self._on_disk is None and not self._nodes):
            return  # the file holds these trees already, or there is no Sigma rule and no file read
        body = json.dumps({"version": version(), "trees": {k: encode(n) for k, n in self._nodes.items()}},
                          separators=(",", ":")).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=self.path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(body)
                os.replace(tmp, self.path)  # a reader sees the old file or the new one (no fsync: a cache)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as e:  # a full or read-only disk: the next start converts again
            log.warning("cannot write the Sigma tree cache %s: %s", self.path, e)
            return
        self._on_disk = frozenset(self._nodes)
        log.info("Sigma rules: %d trees read from %s, %d rules converted", self.hits, self.path, self.misses)

    def _entries(self) -> dict[str, Any]:
        if self._file is None:
            self._file = {}
            try:
                got = json.loads(self.path.read_bytes())
            except FileNotFoundError:
                got = None
            except (OSError, ValueError) as e:
                log.warning("cannot read the Sigma tree cache %s (%s): converting every Sigma rule", self.path, e)
                got = None
            if isinstance(got, dict) and got.get("version") == version() and isinstance(got.get("trees"), dict):
                self._file = got["trees"]
            elif got is not None:
                log.info("the Sigma tree cache %s was made by another converter: converting every Sigma rule",
                         self.path)
            self._on_disk = frozenset(self._file)
        return self._file
