"""``log_format = json``: one JSON object per line, each call's lines carrying its request id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx

from tests.api.test_durability import ROOT, _free_port, _login
from tests.conftest import ADMIN_PASSWORD


def test_json_log_lines_carry_the_request_id_caller_call_outcome_and_duration(tmp_path):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, SECLAKE_ADMIN_PASSWORD=ADMIN_PASSWORD, SECLAKE_LOG_FORMAT="json",
               SECLAKE_SLOW_REQUEST_SECONDS="0.000001")  # every call is "slow": its warning is logged too
    proc = subprocess.Popen([sys.executable, "-m", "seclake", "serve", "--port", str(port), "--data-dir", str(tmp_path)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        token = _login(url, time.monotonic() + 30)
        r = httpx.post(f"{url}/api/auth/userList", json={"kargs": {}},
                       headers={"Servicetoken": token, "X-Request-Id": "trace-42"}, timeout=10)
        assert r.headers["X-Request-Id"] == "trace-42"
        bad = httpx.post(f"{url}/api/auth/userList", json={"kargs": {}},
                         headers={"Servicetoken": token, "X-Request-Id": "evil id; drop"}, timeout=10)
        assert bad.headers["X-Request-Id"] != "evil id; drop" and len(bad.headers["X-Request-Id"]) == 16
        httpx.post(f"{url}/api/ds/get_index_zoom_histogram_lv3", headers={"Servicetoken": token}, timeout=10,
                   json={"kargs": {"partition": "default", "options": {"searchStr": "a AND ("}}})
    finally:
        proc.terminate()
        err = proc.communicate(timeout=30)[1]
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]  # every line is JSON
    assert all({"time", "level", "logger", "message"} <= set(x) for x in lines)
    mine = [x for x in lines if x.get("request_id") == "trace-42"]
    access = [x for x in mine if x["logger"] == "seclake.access"]
    assert len(access) == 1
    assert access[0] | {"duration_ms": 0} == access[0] | {
        "call": "auth/userList", "caller": "admin", "client": "127.0.0.1", "outcome": "OK", "status": 200, "duration_ms": 0}
    assert isinstance(access[0]["duration_ms"], int)
    slow = [x for x in mine if x["logger"] == "seclake.api" and x["level"] == "warning"]
    assert len(slow) == 1 and "slow call auth/userList" in slow[0]["message"]
    failed = [x for x in lines if x["logger"] == "seclake.access" and x.get("call") == "ds/get_index_zoom_histogram_lv3"]
    # The status the error stands for (sent as 200 to the clients, X-Seclake-Status 400).
    assert [x["outcome"] for x in failed] == ["ERROR"] and failed[0]["status"] == 400
