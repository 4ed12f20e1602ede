"""The Java client fluency_import_api's calls against a real seclake
(tests/clients/javaimport): its import (gzip, text/plain in ISO-8859-1, the
``FluencyToken`` header) and its calls, every answer read by a default
Jackson ObjectMapper into the client's CallResponse, which fails on any
top-level field the client does not know.

The client's own sources cannot be fetched where the tests run; the program
makes the same requests with the same libraries (Debian's HttpClient 4.5 and
Jackson 2), as tests/clients/godecode does for the Go clients. Java and those
libraries come from Debian (.ci/run installs them); without them the test is
skipped, and under ``CI=true`` it fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ADMIN_PASSWORD, running_server

HERE = Path(__file__).resolve().parent / "javaimport"
JARS = [Path("/usr/share/java") / f"{name}.jar" for name in (
    "httpclient", "httpcore", "httpmime", "commons-logging", "commons-codec",
    "jackson-databind", "jackson-core", "jackson-annotations")]
# The program's line, as the server must store it (the client sends it in ISO-8859-1).
LINE = "user=jos\u00e9 action=login city=M\u00fcnchen"

pytestmark = pytest.mark.slow


def test_the_java_import_client_imports_searches_and_reads_every_answer(tmp_path: Path) -> None:
    java = shutil.which("java")
    missing = [str(j) for j in JARS if not j.exists()]
    if java is None or missing:
        why = f"java or its libraries are missing ({', '.join(missing) or 'java'}): " \
              "apt-get install default-jdk-headless libhttpclient-java libhttpmime-java libjackson2-databind-java"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    with running_server(tmp_path / "data", commit_interval_seconds=0.2) as server:
        run = subprocess.run(
            [java, "-cp", os.pathsep.join(map(str, JARS)), "ImportClient.java", server.url, "admin", ADMIN_PASSWORD],
            cwd=HERE, capture_output=True, text=True, timeout=300, env={**os.environ, "LC_ALL": "C"},
        )
    assert run.returncode == 0, run.stderr[-3000:]
    steps = {s["step"]: s["answer"] for s in map(json.loads, run.stdout.splitlines())}

    assert steps["login"]["verdict"] == "OK", steps["login"]
    imported = steps["import"]
    assert imported["verdict"] == "OK", imported
    assert imported["response"]["accepted"] == 2
    # Without a token the client reads the error (sent with HTTP 200), not a bare status.
    refused = steps["import without a token"]
    assert refused["verdict"] == "ERROR" and "token" in refused["error"].lower(), refused
    found = steps["search"]
    assert found["verdict"] == "OK", found
    hits = found["response"]["hits"]["hits"]
    # Both lines stored, letters kept; the parsed field searchable by them.
    assert [h["_source"]["@message"] for h in hits] == [LINE, LINE]
    assert {h["_source"]["@fields"]["user"] for h in hits} == {"jos\u00e9"}
    bad = steps["bad query"]
    assert bad["verdict"] == "ERROR" and "position 6" in bad["error"], bad  # where the query breaks
