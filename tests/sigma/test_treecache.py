"""The Sigma rules' trees kept between starts (seclake/sigma/treecache.py): a rule book read by a new process
converts no rule a start converted before, and a cache of another converter, or damaged, is never trusted."""

from __future__ import annotations

import ipaddress
import json
import logging
from pathlib import Path
from unittest.mock import patch

import pytest

from seclake.db.database import Database
from seclake.detect.rule import rule_from_dict
from seclake.detect.rulebook import RuleBook
from seclake.query import ast
from seclake.sigma import conversion, treecache

SIGMA = """title: Certutil Downloads a File
id: 5f8a7c51-3b1e-4c43-9a55-7e0d1c2b3a42
status: test
logsource:
    category: process_creation
    product: windows
detection:
    selection:
        Image|endswith: '\\\\certutil.exe'
        CommandLine|contains|all: ['urlcache', 'http']
    condition: selection
level: high
"""


def test_every_node_type_round_trips():
    net = ipaddress.ip_network("10.0.0.0/8")
    tree = ast.And((ast.Or((ast.Term("@fields.a", "X\ud800", cased=True), ast.Wildcard("@fields.b", "*ab\\*c?"),
                            ast.Contains(None, "Corrupted MAC"), ast.Regex("@fields.c", "(?i)a.c", "re2"))),
                    ast.Not(ast.FieldRef("@fields.a", "@fields.b")), ast.Range("@fields.n", 1.5, None, False, True),
                    ast.Range("@fields.s", "a", "b", kind="string"), ast.Exists("@fields.p"),
                    ast.Cidr("@fields.ip", net), ast.Not(ast.MatchNone()), ast.Or((ast.MatchAll(),))))
    assert treecache.decode(json.loads(json.dumps(treecache.encode(tree)))) == tree
    for bad in (["Eval", "x"], ["Term"], {"Term": 1}, "Term"):
        with pytest.raises((ValueError, TypeError)):
            treecache.decode(bad)


def _book(db: Database, directory: Path) -> RuleBook:
    return RuleBook(db, cache_directory=directory)


def _never_converted(text: str):
    raise AssertionError("converted again")


def test_a_new_process_reads_the_trees_instead_of_converting(db, tmp_path):
    first = _book(db, tmp_path)
    first.import_rules([rule_from_dict(conversion.rule_dict(SIGMA), "")])
    converted = first.get("5f8a7c51-3b1e-4c43-9a55-7e0d1c2b3a42").selector
    assert (tmp_path / treecache.FILE).exists()
    # A new process: nothing converted in memory, pySigma must not run.
    conversion.selector.cache_clear()
    with patch.object(conversion, "selector", _never_converted):
        second = _book(db, tmp_path)
        assert second.get("5f8a7c51-3b1e-4c43-9a55-7e0d1c2b3a42").selector == converted
        assert (second.trees.hits, second.trees.misses) == (1, 0)
        # A rule deleted leaves the file at the next read.
        second.delete("5f8a7c51-3b1e-4c43-9a55-7e0d1c2b3a42")
        second.load()
    assert json.loads((tmp_path / treecache.FILE).read_text())["trees"] == {}


def test_another_converter_or_a_damaged_file_converts_again(db, tmp_path, caplog):
    _book(db, tmp_path).import_rules([rule_from_dict(conversion.rule_dict(SIGMA), "")])
    path = tmp_path / treecache.FILE
    stored = json.loads(path.read_text())
    # An upgrade of pySigma or an edit of the backend: the version differs, every rule is converted once.
    with patch.object(treecache, "version", lambda: "another converter"):
        book = _book(db, tmp_path)
        book.rules()
        assert (book.trees.hits, book.trees.misses) == (0, 1)
        assert json.loads(path.read_text())["version"] == "another converter"
    path.write_text(json.dumps(stored).replace('"Wildcard"', '"Eval"'))  # an entry no node type reads
    with caplog.at_level(logging.WARNING, "seclake.rules"):
        book = _book(db, tmp_path)
        book.rules()
    assert (book.trees.hits, book.trees.misses) == (0, 1) and "bad entry" in caplog.text
    path.write_bytes(b"\x00not json")
    book = _book(db, tmp_path)
    assert len(book.rules()) == 1 and book.trees.misses == 1
    assert json.loads(path.read_text()) == stored  # written again, as it was
