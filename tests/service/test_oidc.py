"""Sign-in with an identity provider (service/oidc.py, api/sso.py), against a
real OpenID provider: the certified ``oidc-provider`` npm package, run by
tests/service/oidc/provider.mjs (its login and consent interaction signs in
a configured account without a form). The HTTP tests follow the redirects
with httpx, as a browser would; one test drives Chromium through the sign-in
page (tests/service/oidc/browser.mjs, playwright-core of tests/web).

Needs node and ``npm ci`` in tests/service/oidc (``make web-test-tools``);
without them the tests are skipped with the reason, under ``CI=true`` they
fail. The browser test also needs Chromium and tests/web's node modules.
"""

from __future__ import annotations

import html
import json
import os
import select
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, quote, urljoin, urlsplit

import httpx
import pytest

from seclake.service import oidc as oidc_module
from seclake.service.login import PASSWORDS_OFF
from seclake.service.secret import SESSION_PREFIX
from tests.conftest import ADMIN_PASSWORD, error_of

HERE = Path(__file__).resolve().parent / "oidc"
WEB = Path(__file__).resolve().parents[1] / "web"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
SECRET = "test-client-secret-0123456789"
ACCOUNTS = {
    "alice": {"email": "alice@example.com", "email_verified": True, "given_name": "Alice", "groups": ["secops-admins"]},
    "bob": {"email": "bob@example.com", "groups": ["analysts", "staff"]},
    "carol": {"email": "carol@example.com", "groups": ["staff"]},
}
ROLES = {"secops-admins": ["admin"], "analysts": ["analyst"]}


def _missing(browser: bool = False) -> str | None:
    if shutil.which("node") is None:
        return "node is missing (apt-get install nodejs npm)"
    if not (HERE / "node_modules" / "oidc-provider").is_dir():
        return "tests/service/oidc/node_modules is missing (`make web-test-tools`, or `npm ci` there)"
    if browser and not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    if browser and not (WEB / "node_modules" / "playwright-core").is_dir():
        return "tests/web/node_modules is missing (`make web-test-tools`)"
    return None


def _need(browser: bool = False) -> None:
    missing = _missing(browser)
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"OIDC tests must run in CI: {missing}")
        pytest.skip(missing)


def _free_port() -> int:
    """A port for the provider, known before it starts, that no other bind to
    port 0 gets meanwhile (seclake's server, other tests): left in TIME_WAIT,
    which the kernel skips when it picks a free port, while the provider's
    listen (SO_REUSEADDR) may take it. (The ephemeral-port-reserve way.)"""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = s.accept()
            accepted.close()  # the accepting side closes first: its end waits in TIME_WAIT
    return port


class Idp:
    """A real OpenID provider in a node process, on a port chosen before
    seclake starts (seclake's settings name its issuer; it names seclake's
    callback)."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = _free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[str] | None = None
        self.keys: dict[str, dict[str, Any]] = {}

    def provider(self, **settings: Any) -> dict[str, Any]:
        """seclake's settings of this provider."""
        return {"name": "test", "display_name": "Test IdP", "issuer": self.issuer, "client_id": "seclake",
                "client_secret": SECRET, "scopes": ["openid", "email", "profile", "groups"], **settings}

    def start(self, seclake_url: str, kid: str = "key-1", login: str = "alice", **config: Any) -> None:
        path = self.workdir / f"idp-{kid}.json"
        path.write_text(json.dumps({
            "port": self.port, "clientId": "seclake", "clientSecret": SECRET,
            "redirectUris": [f"{seclake_url}/auth/oidc/test/callback"],
            "accounts": ACCOUNTS, "login": login, "kid": kid, "key": self._key(kid), **config,
        }))
        errors = self.workdir / f"idp-{kid}.stderr"
        with errors.open("w") as stderr:
            self.process = subprocess.Popen(
                ["node", str(HERE / "provider.mjs"), str(path)], cwd=HERE, stdout=subprocess.PIPE,
                stderr=stderr, text=True,
            )
        # Printed once it listens; a provider that never does fails the test, it does not hang it.
        ready, _, _ = select.select([self.process.stdout], [], [], 60)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            pid = self.process.pid
            state = Path(f"/proc/{pid}/wchan").read_text() if Path(f"/proc/{pid}/wchan").exists() else "exited"
            with socket.socket() as probe:
                listening = probe.connect_ex(("127.0.0.1", self.port)) == 0
            pytest.fail(f"the OpenID provider did not start on port {self.port} (process {state}, "
                        f"port answering: {listening}):\n{errors.read_text()}")
        assert json.loads(line)["issuer"] == self.issuer, line

    def _key(self, kid: str) -> dict[str, Any]:
        """The provider's signing key (a private JWK), one per kid."""
        if kid not in self.keys:
            from joserfc.jwk import RSAKey

            self.keys[kid] = RSAKey.generate_key(2048).as_dict(private=True)
        return self.keys[kid]

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    def login_as(self, account: str) -> None:
        httpx.get(f"{self.issuer}/test/login-as/{account}", timeout=10).raise_for_status()


@pytest.fixture
def idp(tmp_path: Path) -> Any:
    _need()
    provider = Idp(tmp_path)
    yield provider
    provider.stop()


@pytest.fixture
def seclake(start_server: Callable[..., Any], idp: Idp) -> Callable[..., Any]:
    """A seclake server with the test provider (settings overridable), and the provider started for it."""

    def start(provider: dict[str, Any] | None = None, idp_config: dict[str, Any] | None = None, **settings: Any) -> Any:
        server = start_server(oidc_providers=[idp.provider(**(provider or {}))], **settings)
        idp.start(server.url, **(idp_config or {}))
        return server

    return start


def sign_in(server: Any, next_path: str = "/search",
            tamper: Callable[[str], str] | None = None, browser: httpx.Client | None = None) -> httpx.Response:
    """Follow the flow as a browser would, from seclake's start to seclake's
    last answer: the 303 to /login#sso=... or the refusal page."""
    own = browser is None
    browser = browser or httpx.Client(timeout=20)
    try:
        r = browser.get(f"{server.url}/auth/oidc/test/start", params={"next": next_path})
        for _ in range(20):
            if r.status_code not in (302, 303):
                return r
            location = urljoin(str(r.url), r.headers["location"])
            if location.startswith(f"{server.url}/login"):
                return r
            if tamper and location.startswith(f"{server.url}/auth/oidc/test/callback"):
                location = tamper(location)
            r = browser.get(location)
        raise AssertionError("too many redirects")
    finally:
        if own:
            browser.close()


def callback_url(server: Any, browser: httpx.Client) -> str:
    """Run the flow up to the provider's redirect back to seclake, not following it."""
    locations: list[str] = []

    def keep(location: str) -> str:
        locations.append(location)
        return f"{server.url}/login"  # stop there: seclake's page, not the callback

    sign_in(server, tamper=keep, browser=browser)
    return locations[0]


def handoff_code(r: httpx.Response) -> str:
    assert r.status_code == 303, (r.status_code, r.text[:500])
    fragment = dict(parse_qsl(urlsplit(r.headers["location"]).fragment))
    return fragment["sso"]


def refusal(r: httpx.Response, status: int, reason: str) -> str:
    """The refusal page's message, checked to be a page with the reason."""
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("text/html")
    assert f'data-reason="{reason}"' in r.text, r.text
    return html.unescape(r.text)


def audit_logins(server: Any, admin: str) -> list[dict[str, Any]]:
    server.services.audit.flush()
    return [e for e in server.services.audit.recent(200) if e["call"].startswith("auth/oidc/")]


def metric(server: Any, outcome: str) -> float:
    value = server.services.metrics.registry.get_sample_value(
        "seclake_oidc_signins_total", {"provider": "test", "outcome": outcome})
    return value or 0.0


# -- the flow ---------------------------------------------------------------


def test_signing_in_with_the_provider_opens_seclakes_own_session_with_roles_from_groups(seclake, idp) -> None:
    server = seclake(provider={"roles": ROLES, "default_roles": []})
    r = sign_in(server, next_path="/timeline?x=1")
    assert urlsplit(r.headers["location"]).path == "/login"
    assert dict(parse_qsl(urlsplit(r.headers["location"]).query)) == {"next": "/timeline?x=1"}
    record = server.call("auth/ssoSession", {"code": handoff_code(r)})
    assert record["userName"] == "alice" and record["roles"] == ["admin"] and record["sessionToken"].startswith(SESSION_PREFIX)
    # The session works like a password's: alice's group made her an admin.
    users = {u["username"]: u for u in server.call("auth/userList", {}, record["sessionToken"])["users"]}
    assert users["alice"]["oauthProvider"] == "test" and users["alice"]["oauthFlag"] is True
    assert users["alice"]["email"] == "alice@example.com" and users["alice"]["passwordSet"] is False
    # bob's groups map to analyst: signed in, but not an admin.
    idp.login_as("bob")
    bob = server.call("auth/ssoSession", {"code": handoff_code(sign_in(server))})
    assert bob["roles"] == ["analyst"]
    server.fail("auth/userList", {}, bob["sessionToken"], status=403)
    # The one-time code is spent.
    assert "already used" in server.fail("auth/ssoSession", {"code": handoff_code(r)}, status=401)
    assert metric(server, "ok") == 2
    entries = audit_logins(server, record["sessionToken"])
    assert {(e["username"], e["outcome"]) for e in entries} >= {("alice", "OK"), ("bob", "OK")}


def test_a_group_change_at_the_provider_changes_the_roles_at_the_next_sign_in(seclake, idp) -> None:
    server = seclake(provider={"roles": ROLES, "default_roles": []})
    admin = server.login()
    idp.login_as("bob")
    assert server.call("auth/ssoSession", {"code": handoff_code(sign_in(server))})["roles"] == ["analyst"]
    # An admin made bob an admin in seclake; the provider's groups say analyst, and win at sign-in.
    server.call("auth/userUpdate", {"user": {"username": "bob", "roles": ["admin"]}}, admin)
    assert server.call("auth/ssoSession", {"code": handoff_code(sign_in(server))})["roles"] == ["analyst"]
    # The audit says the provider's groups changed them, and when bob was created.
    details = [e["detail"] for e in audit_logins(server, admin) if e["username"] == "bob" and e["outcome"] == "OK"]
    assert "roles ['admin'] -> ['analyst'] (groups)" in details[0] and "user created with roles ['analyst']" in details[1]
    # carol's groups map to no role and there is no default: refused.
    idp.login_as("carol")
    assert "no group of 'carol'" in refusal(sign_in(server), 403, "no_role")


def test_groups_map_to_data_policies_and_no_policy_is_refused_not_opened(seclake, idp) -> None:
    server = seclake(provider={"roles": ROLES, "data_policies": {"analysts": ["acme-only"], "secops-admins": []}})
    admin = server.login()
    server.call("auth/dataPolicyAdd", {"policy": {"name": "acme-only", "filters": {"event": "@customer:acme"}}}, admin)
    idp.login_as("bob")
    server.call("auth/ssoSession", {"code": handoff_code(sign_in(server))})
    assert server.call("auth/getUser", {"username": "bob"}, admin)["user"]["dataPolicies"] == ["acme-only"]
    idp.login_as("carol")  # staff only: no policy named, so no data would be restricted
    refusal(sign_in(server), 403, "no_policy")


# -- refusals ---------------------------------------------------------------


def test_a_wrong_state_a_replayed_callback_and_another_browser_are_refused(seclake, idp) -> None:
    server = seclake()

    def wrong(location: str) -> str:
        return location.replace("state=", "state=x", 1)

    assert "state" in refusal(sign_in(server, tamper=wrong), 401, "state")
    # The callback replayed: its state was used once.
    browser = httpx.Client(timeout=20)
    callback = callback_url(server, browser)
    handoff_code(browser.get(callback))
    refusal(browser.get(callback), 401, "state")
    # A callback URL opened in another browser (login CSRF): no state cookie there.
    callback = callback_url(server, browser)
    assert "not started in this browser" in refusal(httpx.get(callback, timeout=20), 401, "state")
    assert metric(server, "state") == 3
    assert sum(e["outcome"] == "ERROR" for e in audit_logins(server, "")) == 3


def test_an_expired_id_token_is_refused(seclake) -> None:
    # The provider signs its ID tokens as if an hour ago (its clock behind): exp is 55 minutes past.
    server = seclake(idp_config={"idTokenAgeSeconds": 3600, "idTokenTtl": 300})
    page = refusal(sign_in(server), 401, "expired")
    assert "has expired" in page
    assert metric(server, "expired") == 1


def test_a_key_rotation_at_the_provider_is_followed(seclake, idp, monkeypatch) -> None:
    # The refetch bound (one per 10 s) would hold this test's quick rotation.
    monkeypatch.setattr(oidc_module, "JWKS_REFETCH_SECONDS", 0.2)
    server = seclake()
    handoff_code(sign_in(server))
    # The provider restarts with a new signing key: tokens name a kid seclake has not seen.
    idp.stop()
    idp.start(server.url, kid="key-2")
    time.sleep(0.3)
    record = server.call("auth/ssoSession", {"code": handoff_code(sign_in(server))})
    assert record["userName"] == "alice"
    state = server.services.oidc._providers["test"]
    assert [k.kid for k in state.keyset.keys] == ["key-2"]


def test_a_token_signed_by_a_key_the_provider_does_not_publish_is_refused(seclake, idp) -> None:
    from joserfc import jwt
    from joserfc.jwk import RSAKey

    server = seclake()
    handoff_code(sign_in(server))  # keys and discovery read
    state = server.services.oidc._providers["test"]
    forged = RSAKey.generate_key(2048, parameters={"kid": "key-1"})  # the provider's kid, another key
    now = int(time.time())
    token = jwt.encode({"alg": "RS256", "kid": "key-1"}, {
        "iss": idp.issuer, "aud": "seclake", "sub": "alice", "iat": now, "exp": now + 60, "nonce": "n"}, forged)
    with pytest.raises(oidc_module.SignInFailed) as failed:
        server.services.oidc._validate(state, token, "n")
    assert failed.value.reason == "signature"
    unknown = RSAKey.generate_key(2048, parameters={"kid": "key-9"})
    token = jwt.encode({"alg": "RS256", "kid": "key-9"}, {
        "iss": idp.issuer, "aud": "seclake", "sub": "alice", "iat": now, "exp": now + 60, "nonce": "n"}, unknown)
    with pytest.raises(oidc_module.SignInFailed) as failed:
        server.services.oidc._validate(state, token, "n")
    assert "does not publish" in str(failed.value)


def test_each_claim_of_the_id_token_is_checked(seclake, idp) -> None:
    """Past the signature, the claims: each token here is signed by a key the
    provider state holds (swapped in for the test), and differs from a good
    one in one claim or header."""
    from joserfc import jwt
    from joserfc.jwk import KeySet, OctKey, RSAKey

    server = seclake(provider={"leeway_seconds": 5})
    handoff_code(sign_in(server))  # discovery and keys read
    state = server.services.oidc._providers["test"]
    key = RSAKey.generate_key(2048, parameters={"kid": "test-key"})
    state.keyset, state.keyset_at = KeySet([key]), time.monotonic()
    now = int(time.time())
    good = {"iss": idp.issuer, "aud": "seclake", "sub": "alice", "iat": now, "exp": now + 60, "nonce": "n"}

    def check(claims: dict[str, Any], header: dict[str, Any] | None = None, signer: Any = key) -> str:
        token = jwt.encode(header or {"alg": "RS256", "kid": "test-key"}, claims, signer)
        with pytest.raises(oidc_module.SignInFailed) as failed:
            server.services.oidc._validate(state, token, "n")
        return f"{failed.value.reason}: {failed.value}"

    assert server.services.oidc._validate(state, jwt.encode({"alg": "RS256", "kid": "test-key"}, good, key), "n")
    assert "claims" in check({**good, "iss": "https://evil.example"}) and "'iss'" in check({**good, "iss": "x"})
    assert "'aud'" in check({**good, "aud": "another-client"})
    assert "azp" in check({**good, "aud": ["seclake", "another-client"]})
    assert not isinstance(server.services.oidc._validate(state, jwt.encode(
        {"alg": "RS256", "kid": "test-key"}, {**good, "aud": ["seclake", "x"], "azp": "seclake"}, key), "n"), str)
    assert "'nonce'" in check({**good, "nonce": "another-sign-in"})
    assert "'nonce'" in check({k: v for k, v in good.items() if k != "nonce"})
    assert "'sub'" in check({k: v for k, v in good.items() if k != "sub"})
    assert check({**good, "exp": now - 10}).startswith("expired")
    assert server.services.oidc._validate(state, jwt.encode(  # within the leeway
        {"alg": "RS256", "kid": "test-key"}, {**good, "exp": now - 2}, key), "n")
    assert "issued in the future" in check({**good, "iat": now + 60})
    secret = OctKey.import_key(SECRET.encode())  # the client secret as an HMAC key: refused, whatever it signs
    assert "HS256" in check(good, {"alg": "HS256", "kid": "test-key"}, secret)
    unsigned = jwt.encode({"alg": "RS256", "kid": "test-key"}, good, key).rsplit(".", 1)[0] + "."
    with pytest.raises(oidc_module.SignInFailed):
        server.services.oidc._validate(state, unsigned, "n")


def test_pre_provisioned_only_refuses_an_unknown_user_and_admits_one_added(seclake, idp) -> None:
    server = seclake(provider={"create_users": False})
    admin = server.login()
    assert "no seclake account" in refusal(sign_in(server), 403, "not_provisioned")
    server.fail("auth/getUser", {"username": "alice"}, admin, status=404)
    server.call("auth/userAdd", {"user": {"username": "alice", "roles": ["analyst"], "oauthProvider": "test",
                                          "oauthFlag": True}}, admin)
    assert server.call("auth/ssoSession", {"code": handoff_code(sign_in(server))})["userName"] == "alice"
    assert metric(server, "not_provisioned") == 1


def test_a_local_account_of_the_same_name_is_not_taken_over(seclake, idp) -> None:
    server = seclake()
    admin = server.login()
    server.add_user(admin, "alice", ["analyst"])  # a password account, not the provider's
    assert "does not sign in with Test IdP" in refusal(sign_in(server), 403, "not_linked")


def test_local_passwords_off_leaves_only_the_break_glass_admin(seclake, idp) -> None:
    server = seclake(local_passwords=False)
    admin = server.login()  # the break-glass admin still signs in with a password
    server.call("auth/userAdd", {"user": {"username": "dave", "password": "dave-password-1x", "roles": ["analyst"]}},
                admin)
    assert PASSWORDS_OFF in server.fail("auth/login", {"username": "dave", "password": "dave-password-1x"}, status=401)
    assert server.call("auth/ssoProviders", {}) == {
        "providers": [{"name": "test", "displayName": "Test IdP", "signInUrl": "/auth/oidc/test/start"}],
        "localPasswords": False,
    }
    assert server.call("auth/ssoSession", {"code": handoff_code(sign_in(server))})["userName"] == "alice"


def test_an_unknown_provider_and_an_unreachable_one_get_clear_pages(start_server, tmp_path) -> None:
    closed = _free_port()  # nothing listens there
    server = start_server(oidc_providers=[{"name": "test", "display_name": "Down IdP",
                                           "issuer": f"http://127.0.0.1:{closed}", "client_id": "seclake"}])
    with httpx.Client(timeout=20) as browser:
        page = refusal(browser.get(f"{server.url}/auth/oidc/nope/start"), 404, "unknown_provider")
        assert "no identity provider named 'nope'" in page
        page = refusal(browser.get(f"{server.url}/auth/oidc/test/start"), 502, "unreachable")
        assert "Down IdP is unreachable" in page
        # A callback no start preceded.
        refusal(browser.get(f"{server.url}/auth/oidc/test/callback?code=a&state=b"), 401, "state")
    assert metric(server, "unreachable") == 1


def test_a_provider_gone_between_the_redirect_and_the_callback_gets_a_clear_page(seclake, idp) -> None:
    server = seclake()

    def provider_down(location: str) -> str:
        idp.stop()  # the user is sent back, and the provider then stops answering the code exchange
        return location

    assert "Test IdP is unreachable (token endpoint)" in refusal(sign_in(server, tamper=provider_down), 502, "unreachable")
    assert metric(server, "unreachable") == 1


def test_without_a_role_mapping_or_default_roles_a_new_user_is_refused(seclake, idp) -> None:
    server = seclake(provider={"default_roles": []})
    assert "would have no role" in refusal(sign_in(server), 403, "no_role")


HOSTILE = ["", "x" * 5000, "\x00", "a\nb", "\u202e\u0301", "../../etc/passwd", "<script>alert(1)</script>",
           "%00", "//evil.example/", "https://evil.example/", "\r\nSet-Cookie: a=b", "é" * 3000]


def test_hostile_values_in_every_parameter_of_the_browser_routes_get_a_page_never_a_5xx(seclake, idp) -> None:
    server = seclake()
    with httpx.Client(timeout=20) as browser:
        for value in HOSTILE:
            for path, params in (
                ("/auth/oidc/test/start", {"next": value}),
                ("/auth/oidc/test/callback", {"state": value, "code": value}),
                ("/auth/oidc/test/callback", {"state": value, "error": value, "error_description": value}),
            ):
                r = browser.get(server.url + path, params=params)
                assert r.status_code < 500, (path, value, r.status_code)
                assert "<script>" not in r.text and "Set-Cookie: a" not in str(r.headers)
            r = browser.get(f"{server.url}/auth/oidc/{quote(value, safe='')}/start")
            assert r.status_code in (404, 307), (value, r.status_code)  # 307: Starlette's slash redirect for ""
        # A started flow whose callback carries the provider's error: refused, the error quoted as text.
        r = sign_in(server, tamper=lambda loc: loc.split("?")[0] + "?" + "&".join(
            p for p in urlsplit(loc).query.split("&") if p.startswith("state=")) + "&error=access_denied"
            "&error_description=%3Cb%3Eno%3C%2Fb%3E")
        assert "refused the sign-in: &lt;b&gt;no&lt;/b&gt;" in r.text and r.status_code == 401


def test_the_next_path_stays_on_this_site() -> None:
    assert oidc_module._local_path("//evil.example/x") == "/search"
    assert oidc_module._local_path("https://evil.example/") == "/search"
    assert oidc_module._local_path("/\\evil.example") == "/search"
    assert oidc_module._local_path("/login?next=/x") == "/search"
    assert oidc_module._local_path("/rules?q=1") == "/rules?q=1"


# -- the browser ------------------------------------------------------------


@pytest.mark.slow
def test_the_sign_in_page_signs_in_with_the_provider_in_chromium(seclake, idp, tmp_path) -> None:
    _need(browser=True)
    server = seclake(provider={"roles": ROLES, "default_roles": []})
    run = subprocess.run(
        ["node", str(HERE / "browser.mjs"), server.url, str(tmp_path), idp.issuer], cwd=HERE,
        capture_output=True, text=True, timeout=300, env={**os.environ, "CHROMIUM_PATH": CHROMIUM},
    )
    report = run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")
    assert run.returncode == 0, report
    assert "ok - signed in as alice" in run.stdout, report
    assert "ok - a user whose groups map to no role sees why" in run.stdout, report
    entries = audit_logins(server, "")
    assert any(e["username"] == "alice" and e["outcome"] == "OK" for e in entries)


# -- settings ---------------------------------------------------------------


def test_a_providers_client_secret_is_masked_and_names_must_differ(tmp_path) -> None:
    from pydantic import ValidationError

    from seclake.settings import Settings

    provider = {"name": "okta", "issuer": "https://example.okta.com", "client_id": "c", "client_secret": "hush-hush"}
    shown = Settings(data_dir=tmp_path, oidc_providers=[provider]).masked()["oidc_providers"]
    assert shown[0]["client_secret"] != "hush-hush" and "hush-hush" not in json.dumps(shown)
    with pytest.raises(ValidationError, match="provider names must differ"):
        Settings(data_dir=tmp_path, oidc_providers=[provider, provider])
    with pytest.raises(ValidationError, match="name"):
        Settings(data_dir=tmp_path, oidc_providers=[{**provider, "name": "../x"}])


def test_one_address_cannot_hold_more_than_its_share_of_sign_ins_in_progress(seclake, idp, monkeypatch) -> None:
    monkeypatch.setattr(oidc_module, "MAX_PENDING_PER_CLIENT", 3)
    server = seclake()
    with httpx.Client(timeout=20) as browser:
        for _ in range(3):
            assert browser.get(f"{server.url}/auth/oidc/test/start").status_code == 302
        page = refusal(browser.get(f"{server.url}/auth/oidc/test/start"), 429, "too_many")
        assert "3 sign-ins are in progress from this address" in page
    # A finished flow stops counting: with two of the three gone, two sign-ins pass.
    oidc = server.services.oidc
    for flow in list(oidc._pending)[:2]:
        with httpx.Client(timeout=20) as other:
            refusal(other.get(f"{server.url}/auth/oidc/test/callback", params={"state": flow, "code": "x"}), 401, "state")
    handoff_code(sign_in(server))
    handoff_code(sign_in(server))
    assert metric(server, "too_many") == 1


def test_the_settings_example_of_docs_sso_is_valid(tmp_path) -> None:
    from seclake.settings import Settings

    doc = (Path(__file__).resolve().parents[2] / "docs" / "sso.md").read_text()
    example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "seclake.toml").write_text(example)
    settings = Settings(config=tmp_path / "seclake.toml", data_dir=tmp_path)
    okta = settings.oidc_providers[0]
    assert okta.roles["seclake-admins"] == ["admin"] and okta.data_policies["seclake-admins"] == []
    assert settings.local_passwords is False and settings.break_glass_admin == "admin"
