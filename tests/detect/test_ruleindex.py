"""The rule index: a record meets only the rules it can match, and the
rules it matches are exactly those whose matcher says so."""

from __future__ import annotations

import dataclasses

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.detect.rule import rule_from_dict
from seclake.detect.ruleindex import Need, RuleIndex, needs_of, required_literal
from seclake.detect.ruleset import RuleSet
from seclake.query import ast
from seclake.query.matcher import RecordView
from seclake.record.dataset import EVENTS

F = "@fields."
PATHS = ["event.code", "process.executable", "process.command_line", "winlog.channel"]
WORDS = ["1", "4688", "007", "7", "C:\\Windows\\System32\\whoami.exe", "whoami", "powershell -enc AAA",
         "Security", "sysmon", "cmd.exe /c whoami", "ab", "ÉCOLE", "école", "",
         # A record's values are searched joined by a newline unless a literal holds one.
         "two\nlines", "two", "lines",
         # RE2's (?i) folds the Kelvin sign to k and the long s to s; str.lower does not.
         "\u212aelvin ſystem", "Kelvin System"]


def rule(name: str, selector: ast.Node):
    base = rule_from_dict({"name": name, "behavior": name, "query": "x:1", "keyField": "host.name",
                           "keyType": "host", "riskScore": 1})
    return dataclasses.replace(base, selector=selector)


def leaf(draw) -> ast.Node:
    path = F + draw(st.sampled_from(PATHS))
    word = draw(st.sampled_from(WORDS))
    kind = draw(st.sampled_from(["term", "cased", "wild", "contains", "exists", "text", "prefix", "regex"]))
    if kind == "regex":  # Sigma's |re, on a keyword field, a text field or the default field
        where = draw(st.sampled_from([path, path, None, "@message"]))
        return ast.Regex(where, draw(patterns(word)), flavor="re2")
    if kind == "term":
        return ast.Term(path, word)
    if kind == "cased":
        return ast.Term(path, word, cased=True)
    if kind == "wild":
        cut = draw(st.integers(0, len(word)))
        # Lucene's escaping: a literal backslash is written twice.
        body = word[cut:].replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")
        return ast.Wildcard(path, draw(st.sampled_from(["*", "", "?*"])) + body + draw(st.sampled_from(["*", "", "?"])))
    if kind == "contains" and hasattr(ast, "Contains"):
        return ast.Contains(path, word[: draw(st.integers(0, len(word)))], cased=draw(st.booleans()))
    if kind == "text":
        # Field-less keywords (Sigma's) and a text field: substrings of lowercased text, one RE2 set per path.
        where = draw(st.sampled_from([None, "@message", F + "process.command_line"]))
        return ast.Contains(where, word[draw(st.integers(0, len(word))):], cased=draw(st.booleans()))
    if kind == "prefix":  # an object exists when a leaf below it does
        return ast.Exists(draw(st.sampled_from(["@fields", F + "event", F + "process", "@message"])))
    return ast.Exists(path)


def _escaped(text: str) -> str:
    return "".join("\\" + c if c.isascii() and not c.isalnum() and c not in " \n" else c for c in text)


# What may stand between a regex's literal parts: repeats of the character before, classes, groups, anchors...
PIECES = ["", "\\s*", "+", "?", "*?", ".*", "[a-z]", "[^x]", "{1,2}", "{2}", "{,2}", "(x)?", "(?:ab|c)", "|zz", "^",
          "$", "\\d", "\\b", "\\.", "\\x41", "s", "K", "\n"]


@st.composite
def patterns(draw, word: str) -> str:
    """An RE2 pattern made of a word's parts and regex pieces between them."""
    cuts = sorted(draw(st.lists(st.integers(0, len(word)), max_size=3)))
    out, at = [draw(st.sampled_from(["", "", "(?i)", "(?s)", "(?is)", "^"]))], 0
    for cut in cuts:
        out += [_escaped(word[at:cut]), draw(st.sampled_from(PIECES))]
        at = cut
    out.append(_escaped(word[at:]))
    try:
        re2.compile("".join(out), QUIET)
    except re2.error:  # a repeat of nothing ("+" first): the word alone
        return _escaped(word)
    return "".join(out)


QUIET = re2.Options()
QUIET.log_errors = False


@settings(max_examples=400, deadline=None)
@given(data=st.data(), word=st.sampled_from(WORDS), text=st.sampled_from(WORDS))
def test_a_regexs_required_literal_is_in_every_text_it_matches(data, word, text):
    pattern = data.draw(patterns(word))
    literal = required_literal(pattern)
    folded = word.replace("k", "\u212a").replace("K", "\u212a").replace("s", "ſ").replace("S", "ſ")
    for haystack in (text, word, word.upper(), folded, f"x {word} y", f"x {text}{word}"):
        if re2.search(pattern, haystack):
            assert literal in haystack.lower(), (pattern, literal, haystack)


def test_a_regex_gives_the_longest_literal_it_surely_requires():
    assert required_literal(r"ping\s+-n.{6,64}echo EEEE\s?>\s?") == "echo eeee"
    assert required_literal(r"\$PSHome\[\s*\d{1,3}\s*\]") == "$pshome["
    assert required_literal(r"net\s+stop SuperBackupMan") == "stop superbackupman"
    assert required_literal(r"abcd*") == "abc"  # d may be absent
    assert required_literal(r"(?i)desktop") == "top"  # k and s fold to non-ASCII letters
    for none in (r"ipconfig|arp", r"\x41\x42", r"(?-i)abc", r"[abc]+"):
        assert required_literal(none) == "", none
    cmd = F + "process.command_line"
    [gate] = needs_of(ast.Regex(cmd, r"ipconfig\s+/all", flavor="re2"), EVENTS)
    assert gate == {Need("s", cmd, "ipconfig")}
    [gate] = needs_of(ast.Regex(None, r"Corrupted MAC", flavor="re2"), EVENTS)
    assert gate == {Need("t", "", "corrupted mac")}


def test_an_or_branch_is_gated_by_its_most_telling_literal_not_its_fewest_alternatives():
    # SigmaHQ's EDR-Freeze: an image named edr-freeze (8 paths x names) that ends in .exe (4 paths), or an
    # import hash: gated by ".exe", every process start passed it and ran the rule's matcher.
    images = [F + p for p in ("Image", "NewProcessName", "winlog.event_data.Image", "winlog.event_data.NewProcessName")]
    named = ast.Or(tuple(ast.Wildcard(p, f"*\\\\{n}*") for p in images for n in ("edr-freeze", "edrfreeze")))
    exe = ast.Or(tuple(ast.Wildcard(p, "*.exe") for p in images))
    hashes = ast.Wildcard(F + "Hashes", "*imphash=1195f7935954a2cd09157390c33f8e8c*")
    [gate] = needs_of(ast.Or((ast.And((named, exe)), hashes)), EVENTS)
    assert not any(n.text == ".exe" for n in gate), sorted(gate)
    record = {"@fields": {"Image": "C:\\Windows\\System32\\cmd.exe", "Hashes": "IMPHASH=00"}}
    ruleset = RuleSet([rule("edr", ast.Or((ast.And((named, exe)), hashes)))], 1)
    assert ruleset._by_dataset["event"][1].candidates(RecordView(record, EVENTS)) == []


@st.composite
def trees(draw, depth: int = 0) -> ast.Node:
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return leaf(draw)
    kind = draw(st.sampled_from(["and", "or", "not"]))
    if kind == "not":
        return ast.Not(draw(trees(depth + 1)))
    children = tuple(draw(st.lists(trees(depth + 1), min_size=1, max_size=3)))
    return ast.And(children) if kind == "and" else ast.Or(children)


# Fields a log source is told by, as Sigma's pipelines write them: one value, another, or both (a list).
SOURCES = {"winlog.channel": ["Security", "sysmon"], "program": ["sshd", "sudo"]}
for _path, _values in SOURCES.items():
    PATHS.append(_path)
    WORDS.extend(_values)

records = st.fixed_dictionaries({}, optional={
    "@message": st.one_of(st.sampled_from(WORDS), st.just("run CMD.EXE /c WHOAMI now")),
    "@fields": st.fixed_dictionaries({}, optional={
        p: st.one_of(st.sampled_from(WORDS), st.integers(0, 5000), st.lists(st.sampled_from(WORDS), max_size=2))
        for p in PATHS
    }),
})


@settings(max_examples=200, deadline=None)
@given(selectors=st.lists(trees(), min_size=1, max_size=12), record=records)
def test_the_index_keeps_exactly_the_rules_whose_matcher_matches(selectors, record):
    ruleset = RuleSet([rule(f"r{i}", s) for i, s in enumerate(selectors)], 1)
    every = [n for n, (r, _) in enumerate(ruleset.rules("event")) if r.matcher()(RecordView(record, EVENTS))]
    assert ruleset.matching("event", record) == every
    # Split by log source at every size (a real rule set splits only groups of PARTITION_MIN rules).
    view = RecordView(record, EVENTS)
    for partition_min in (1, 2):
        index = RuleIndex(selectors, EVENTS, partition_min)
        assert [n for n in index.candidates(view) if ruleset.rules("event")[n][0].matcher()(view)] == every


def sigma_like(i: int):
    """A rule as the Sigma backend writes one for a Sysmon event: its event code, an
    image's end or original name, a command line's piece (several thousand of them)."""
    code = F + "event.code"
    image, command = F + "process.executable", F + "process.command_line"
    return rule(f"r{i}", ast.And((
        ast.Term(code, str(1 + i % 20)),
        ast.Or((ast.Wildcard(image, f"*\\\\tool{i}.exe"), ast.Term(F + "process.pe.original_file_name", f"tool{i}.exe"))),
        ast.Wildcard(command, f"*-flag{i % 50}*"),
        ast.Not(ast.Wildcard(command, "*benign*")),
    )))


def test_a_record_meets_only_the_rules_it_can_match_among_thousands():
    rules = [sigma_like(i) for i in range(2000)]
    index = RuleIndex([r.selector for r in rules], EVENTS)
    assert index.stats()["always"] == 0
    record = {"@fields": {"event": {"code": "1"}, "process": {
        "executable": "C:\\Temp\\tool40.exe", "command_line": "tool40.exe -flag40 -x"}}}
    view = RecordView(record, EVENTS)
    # Filed by the image's name (shared by one rule), checked against the flag and the code.
    assert index.candidates(view) == [40]
    ruleset = RuleSet(rules, 1)
    assert ruleset.matching("event", record) == [40]
    record["@fields"]["process"]["command_line"] = "tool40.exe -flag41"
    assert ruleset.matching("event", record) == []
    # A record of another event code meets none.
    assert index.candidates(RecordView({"@fields": {"event": {"code": "4688"}}}, EVENTS)) == []


def test_rules_are_split_by_their_log_source_first():
    """Windows rules split by channel then event id, the others left together: a record reaches only
    the groups of its own values, and a rule of two event ids (1 or 4688) is found once."""
    channel, code, image = F + "winlog.channel", F + "event.code", F + "process.executable"
    rules = []
    for i in range(200):
        ids = ast.Or((ast.Term(code, "1"), ast.Term(code, "4688"))) if i % 2 else ast.Term(code, str(i % 7))
        rules.append(rule(f"w{i}", ast.And((ast.Term(channel, "Sysmon"), ids, ast.Not(ast.Term(image, f"x{i}"))))))
    rules += [rule(f"n{i}", ast.Not(ast.Term(image, f"y{i}"))) for i in range(20)]
    index = RuleIndex([r.selector for r in rules], EVENTS)
    assert index.stats()["groups"] > 7
    record = {"@fields": {"winlog": {"channel": "sysmon"}, "event": {"code": ["1", "4688"]},
                          "process": {"executable": "x1"}}}
    got = index.candidates(RecordView(record, EVENTS))
    assert got == sorted(set(got))
    assert got == [i for i in range(200) if i % 2 or i % 7 == 1] + list(range(200, 220))
    assert RuleSet(rules, 1).matching("event", record) == [i for i in got if i != 1]
    assert index.candidates(RecordView({"@fields": {"program": "sshd"}}, EVENTS)) == list(range(200, 220))


def test_log_sources_and_keywords_are_looked_up_not_tried():
    """Rules that name their log source by a field being there (a syslog line's program, CloudTrail's
    eventSource) and field-less keywords: a record of another source meets none of them."""
    program, source = F + "program", F + "eventSource"
    rules = [rule(f"k{i}", ast.And((ast.Exists(program), ast.Contains(None, f"needle {i} here"))))
             for i in range(300)]
    rules += [rule(f"c{i}", ast.And((ast.Exists(source), ast.Not(ast.Term(F + "eventName", f"n{i}")))))
              for i in range(300)]
    ruleset = RuleSet(rules, 1)
    index = ruleset._by_dataset["event"][1]
    assert index is not None and index.stats()["always"] == 0
    windows = {"@fields": {"event": {"code": "1"}}, "@message": "needle 7 here"}
    assert index.candidates(RecordView(windows, EVENTS)) == []
    sshd = {"@fields": {"program": "sshd"}, "@message": "x NEEDLE 7 HERE y"}
    assert index.candidates(RecordView(sshd, EVENTS)) == [7]
    assert ruleset.matching("event", sshd) == [7]
    trail = {"@fields": {"eventSource": "iam.amazonaws.com", "eventName": "n3"}}
    assert ruleset.matching("event", trail) == [300 + i for i in range(300) if i != 3]


def test_a_keyword_rule_is_filed_under_its_log_source_not_its_text():
    """SigmaHQ's Linux keyword rules: their log source is a field being there or a keyword (an OR), their
    body field-less keywords. A record of another source (a firewall's) passes neither, and its whole text is
    never lowered and searched for them (it was, for every such record, when the text was their gate)."""
    program, product = F + "program", F + "observer.product"
    log_source = ast.Or((ast.Exists(program), ast.Term(product, "auditd")))
    rules = [rule(f"k{i}", ast.And((log_source, ast.Contains(None, f"needle {i} here")))) for i in range(40)]
    ruleset = RuleSet(rules, 1)
    index = ruleset._by_dataset["event"][1]
    firewall = RecordView({"@fields": {"observer": {"product": "FortiGate"}}, "@message": "needle 7 here"}, EVENTS)
    assert index.candidates(firewall) == [] and None not in firewall._lowered
    sshd = {"@fields": {"program": "sshd"}, "@message": "x NEEDLE 7 HERE y"}
    assert index.candidates(RecordView(sshd, EVENTS)) == [7] and ruleset.matching("event", sshd) == [7]


def test_what_gives_no_gate_and_what_does():
    code, cmd = F + "event.code", F + "process.command_line"
    assert needs_of(ast.Not(ast.Term(code, "1")), EVENTS) == []
    assert needs_of(ast.Wildcard(cmd, "*"), EVENTS) == []
    assert needs_of(ast.Wildcard(cmd, "*whoami*", cased=True), EVENTS) == []
    assert needs_of(ast.Term(None, "whoami"), EVENTS) == []  # the default field: tokens, not keywords
    assert needs_of(ast.Or((ast.Term(code, "1"), ast.Not(ast.Exists(cmd)))), EVENTS) == [], "one branch passes ungated"
    [gate] = needs_of(ast.Or((ast.Term(code, "1"), ast.Exists(cmd))), EVENTS)
    assert {(n.kind, n.path, n.text) for n in gate} == {("k", code, "1"), ("e", cmd, "")}
    [gate] = needs_of(ast.Contains(None, "Corrupted MAC on input"), EVENTS)
    assert {(n.kind, n.path, n.text) for n in gate} == {("t", "", "corrupted mac on input")}
    assert needs_of(ast.Contains(None, "Corrupted", cased=True), EVENTS) == []
    [gate] = needs_of(ast.Wildcard(cmd, "*\\\\whoami.exe /*"), EVENTS)
    assert {(n.kind, n.text) for n in gate} == {("s", "\\whoami.exe /")}
    [gate] = needs_of(ast.Term(code, "007"), EVENTS)
    assert {(n.kind, n.text) for n in gate} == {("k", "7")}


def test_values_are_searched_joined_only_when_no_literal_spans_a_join():
    cmd = F + "process.command_line"
    rules = [rule("nl", ast.Wildcard(cmd, "*o\nl*")), rule("plain", ast.Wildcard(cmd, "*wo*"))]
    ruleset = RuleSet(rules, 1)
    two_values = {"@fields": {"process": {"command_line": ["two", "lines"]}}}
    assert ruleset.matching("event", two_values) == [1]
    index = ruleset._by_dataset["event"][1]
    assert index is not None and index.candidates(RecordView(two_values, EVENTS)) == [1], "not across values"
    assert ruleset.matching("event", {"@fields": {"process": {"command_line": ["two\nlines"]}}}) == [0, 1]
    assert ruleset.matching("event", {"@message": "two", "@fields": {"process": {"x": "lines"}}}) == []


def test_a_new_generation_shares_the_literal_sets_of_the_last():
    rules = [sigma_like(i) for i in range(100)]
    first = RuleIndex([r.selector for r in rules], EVENTS)
    second = RuleIndex([r.selector for r in rules[:-1]], EVENTS)  # one rule disabled
    shared = {id(s) for f in first._flats for s in f._sets.values()} & {id(s) for f in second._flats for s in f._sets.values()}
    assert shared, "a group whose literals did not change keeps its compiled set"


def test_an_or_of_log_sources_gates_by_every_keyword_field_its_branches_share():
    # Sigma's process creation: event 1 on Sysmon's channel or 4688 on Security's. Gated by the channels
    # alone, a process-creation rule without another gate (a negation, a field reference) met every Sysmon
    # event: network connections, file creations...
    channel, code, image = F + "winlog.channel", F + "event.code", F + "process.executable"
    source = ast.Or((ast.And((ast.Term(code, "1"), ast.Term(channel, "Sysmon"))),
                     ast.And((ast.Term(code, "4688"), ast.Term(channel, "Security")))))
    assert {Need("k", code, "1"), Need("k", code, "4688")} in needs_of(source, EVENTS)
    rules = [rule(f"p{i}", ast.And((source, ast.Not(ast.Term(image, f"x{i}"))))) for i in range(20)]
    ruleset = RuleSet(rules, 1)
    index = ruleset._by_dataset["event"][1]
    network = {"@fields": {"winlog": {"channel": "Sysmon"}, "event": {"code": "3"}, "process": {"executable": "a"}}}
    assert index.candidates(RecordView(network, EVENTS)) == []
    start = {"@fields": {"winlog": {"channel": "Sysmon"}, "event": {"code": "1"}, "process": {"executable": "a"}}}
    assert len(index.candidates(RecordView(start, EVENTS))) == 20 == len(ruleset.matching("event", start))
