"""What the web marks in a value (seclake/web/highlight.js), run by node: only what the query matched
there. The same in the browser: tests/web/e2e.mjs, "highlights: only what the query matched"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from seclake.web import WEB_DIR

RUN = """
import { markRanges } from %s;
const cases = JSON.parse(process.argv[1]);
console.log(JSON.stringify(cases.map(([text, marks, path]) =>
  markRanges(text, marks, path).map(([a, b]) => text.slice(a, b)))));
"""


def marked(*cases: tuple) -> list[list[str]]:
    """The marked pieces of each (text, marks, path)."""
    if shutil.which("node") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is missing (apt-get install nodejs)")
        pytest.skip("node is missing (apt-get install nodejs)")
    script = RUN % json.dumps((WEB_DIR / "highlight.js").as_uri())
    run = subprocess.run(["node", "--input-type=module", "-e", script, json.dumps(cases)],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(run.stdout)


def field(path: str, value: str, text: bool = False) -> dict:
    return {"field": path, "value": value, "text": text}


CATEGORY = field("@fields.event.category", "authentication")
RAW = '{"@fields":{"EventID":4625,"AuthenticationPackageName":"NTLM","event":{"category":"authentication"}}}'


def test_a_field_term_marks_that_field_and_nothing_else() -> None:
    assert marked(
        (RAW, [CATEGORY], "@message"),  # the issue: "Authentication" inside AuthenticationPackageName
        ("4625 An account failed to log on: Authentication Package NTLM", [CATEGORY], "@fields.message"),
        ("authentication", [CATEGORY], "@fields.event.category"),
        ("Authentication", [CATEGORY], "@fields.event.category"),  # keywords match case-insensitively
        ("NTLM", [CATEGORY], "@fields.AuthenticationPackageName"),
        ("authentication-x", [CATEGORY], "@fields.event.category"),  # the whole value, not a piece
        ("4625", [field("@fields.EventID", "4625.0")], "@fields.EventID"),  # numbers as numbers
    ) == [[], [], ["authentication"], ["Authentication"], [], [], ["4625"]]


def test_words_are_whole_tokens_as_the_text_index_cuts_them() -> None:
    assert marked(
        (RAW, ["authentication"], "@message"),  # a word of no field: the token, not AuthenticationPackageName
        ("AuthenticationPackageName: authentication", [field("*", "authentication", True)], "@fields.x"),
        ("Failed password for root; failedx; FAILED", [field("*", "failed", True)], "@message"),
        ("Failed password for root", [field("*", "failed password", True)], "@message"),  # a phrase, adjacent
        ("password failed", [field("*", "failed password", True)], "@message"),  # not in order: nothing
        ("ran mimikatz.exe from C:\\x\\mimikatz.exe", [field("*", "mimikatz.exe", True)], "@fields.message"),
        ("Zürich zürich", [field("*", "ZÜRICH", True)], None),  # Unicode letters, lowercased
        ("denied here", [field("@message", "denied", True)], "@fields.message"),  # another text field
        ("denied here", [field("@message", "denied", True)], "@message"),
    ) == [["authentication"], ["authentication"], ["Failed", "FAILED"], ["Failed password"], [], ["mimikatz.exe", "mimikatz.exe"],
          ["Zürich", "zürich"], [], ["denied"]]


def test_overlaps_join_and_hostile_marks_are_ignored() -> None:
    assert marked(
        ("a b c", [field("*", "a b", True), field("*", "b c", True)], "@message"),
        ("x", [None, 1, {"field": "*"}, field("*", "", True), field("*", "--", True)], "@message"),
        ("x" * 5000 + " y", ["y"] * 50, "@message"),
    ) == [["a b c"], [], ["y"]]
