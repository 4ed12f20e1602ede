"""The auth/ calls over real HTTP: login, token headers, sessions and API
tokens ending, roles, user management and the last-admin rule."""

from __future__ import annotations

import re
import time
from datetime import datetime

import pytest
from tests.conftest import status_of

ISO_FRACTION = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
SESSION_FIELDS = {
    "sessionToken": str, "publicKey": str, "userName": str, "createdOn": str, "roles": list, "status": str,
    "fullName": str, "rights": str, "email": str, "organization": str, "name": str, "preference": dict,
    "timezone": str, "profile": (dict, type(None)),
}
USER_FIELDS = {
    "username": str, "email": str, "firstName": str, "lastName": str, "organization": str, "rights": str,
    "restricted": bool, "disabled": bool, "lastLogin": (str, type(None)), "passwordDate": str,
    "preference": dict, "roles": list, "dataPolicies": (list, type(None)), "APIPolicies": (list, type(None)),
    "profile": (dict, type(None)), "oauthProvider": str, "oauthFlag": bool, "passwordSet": bool,
}


# -- login ---------------------------------------------------------------------


def test_login_returns_the_whole_session_record(server) -> None:
    record = server.call("auth/login", {"username": "admin", "password": "admin-test-password"})
    assert set(record) == set(SESSION_FIELDS)
    for name, kind in SESSION_FIELDS.items():
        assert isinstance(record[name], kind), name
    assert record["status"] == "succeed"
    assert record["userName"] == "admin" and record["roles"] == ["admin"]
    assert record["preference"]["timezone"] == {"value": "UTC", "policy": "Server"}
    assert record["timezone"] == "UTC"
    datetime.fromisoformat(record["createdOn"])
    assert record["sessionToken"].startswith("sls_") and len(record["sessionToken"]) >= 4 + 43


def test_wrong_password_and_unknown_user_get_the_same_answer(server) -> None:
    wrong = server.fail("auth/login", {"username": "admin", "password": "not-the-password"}, status=401)
    unknown = server.fail("auth/login", {"username": "nobody-here", "password": "not-the-password"}, status=401)
    assert wrong == unknown == "auth/login: invalid username or password"


@pytest.mark.parametrize(
    ("kargs", "field"),
    [({"password": "x"}, "kargs.username"), ({"username": 7, "password": "x"}, "kargs.username"),
     ({"username": "admin"}, "kargs.password"), ({"username": "admin", "password": ["x"]}, "kargs.password")],
)
def test_login_with_malformed_credentials_is_400_naming_the_field(server, kargs, field) -> None:
    assert field in server.fail("auth/login", kargs, status=400)


def test_lockout_after_ten_failures_and_reset_on_success(server, admin_token, new_name) -> None:
    name = new_name("lock")
    server.call("auth/userAdd", {"user": {"username": name, "password": "right-password"}}, admin_token)
    # Nine failures, then a success: the count starts again.
    for _ in range(9):
        server.fail("auth/login", {"username": name, "password": "wrong-password"}, status=401)
    server.login(name, "right-password")
    for _ in range(9):
        server.fail("auth/login", {"username": name, "password": "wrong-password"}, status=401)
    server.login(name, "right-password")
    # Ten in a row lock the username, even against the right password.
    for _ in range(10):
        server.fail("auth/login", {"username": name, "password": "wrong-password"}, status=401)
    r = server.post("auth/login", {"username": name, "password": "right-password"})
    assert status_of(r) == 429 and r.json()["verdict"] == "ERROR"
    assert "too many failed logins" in r.json()["error"]
    assert 0 < int(r.headers["Retry-After"]) <= 15 * 60
    # Other users are not affected.
    server.login()


def test_lockout_ends_after_the_lockout_time(start_server) -> None:
    srv = start_server(login_max_failures=2, login_lockout_minutes=0.02)
    for _ in range(2):
        srv.fail("auth/login", {"username": "admin", "password": "wrong-password"}, status=401)
    srv.fail("auth/login", {"username": "admin", "password": "admin-test-password"}, status=429)
    time.sleep(1.5)
    srv.login()


def test_unknown_usernames_are_locked_too(start_server) -> None:
    srv = start_server(login_max_failures=3)
    for _ in range(3):
        srv.fail("auth/login", {"username": "ghost", "password": "whatever-it-takes-1"}, status=401)
    srv.fail("auth/login", {"username": "ghost", "password": "whatever-it-takes-1"}, status=429)


# -- tokens in headers -----------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    ["Servicetoken", "servicetoken", "SERVICETOKEN", "Authorization", "FluencyToken", "Fluencytoken", "fluencytoken"],
)
def test_every_token_header_is_accepted(server, admin_token, header) -> None:
    value = f"Bearer {admin_token}" if header == "Authorization" else admin_token
    r = server.post("auth/userList", {}, headers={header: value})
    assert r.status_code == 200 and r.json()["verdict"] == "OK"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({}, "missing token"), ({"Servicetoken": "sls_nonsense"}, "invalid token"),
     ({"Servicetoken": "slk_nonsense"}, "invalid token"), ({"Servicetoken": "junk"}, "invalid token"),
     ({"Authorization": "Basic YWRtaW46YWRtaW4="}, "missing token"), ({"Servicetoken": "x" * 5000}, "invalid token")],
)
def test_missing_or_invalid_token_is_401(server, headers, expected) -> None:
    r = server.post("auth/userList", {}, headers=headers)
    assert expected in server.fail("auth/userList", {}, headers=headers, status=401)
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_session_ends_after_idle_time(start_server) -> None:
    srv = start_server(session_idle_minutes=0.02)  # 1.2 s
    token = srv.login()
    srv.call("auth/userList", {}, token)
    time.sleep(0.5)
    srv.call("auth/userList", {}, token)  # activity keeps it alive
    time.sleep(1.6)
    assert "inactivity" in srv.fail("auth/userList", {}, token, status=401)


def test_session_ends_after_its_lifetime_despite_activity(start_server) -> None:
    srv = start_server(session_max_hours=1.5 / 3600)  # 1.5 s
    token = srv.login()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        srv.call("auth/userList", {}, token)
        time.sleep(0.2)
    time.sleep(0.8)
    assert "maximum lifetime" in srv.fail("auth/userList", {}, token, status=401)


def test_api_token_lifecycle(server, admin_token, new_name) -> None:
    name = new_name("tok")
    added = server.call("auth/api_token", {"action": "add", "name": name}, admin_token)
    secret = added["token"]
    assert secret.startswith("slk_") and len(secret) >= 4 + 43
    assert added["state"] == "active" and added["lastUsed"] is None
    # Usable exactly like a session token, in any header.
    server.call("auth/userList", {}, secret)
    assert server.post("auth/userList", {}, headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    listed = server.call("auth/api_token", {"action": "list"}, admin_token)["tokens"]
    mine = [t for t in listed if t["name"] == name]
    assert len(mine) == 1 and "token" not in mine[0] and secret not in str(listed)
    assert ISO_FRACTION.fullmatch(mine[0]["lastUsed"])
    revoked = server.call("auth/api_token", {"action": "delete", "id": added["id"]}, admin_token)
    assert revoked["state"] == "revoked"
    assert "revoked" in server.fail("auth/userList", {}, secret, status=401)


def test_api_token_expires(server, admin_token) -> None:
    secret = server.call("auth/api_token", {"action": "add", "expiresInDays": 1.0 / 86400}, admin_token)["token"]
    server.call("auth/userList", {}, secret)
    time.sleep(1.2)
    assert "expired" in server.fail("auth/userList", {}, secret, status=401)


@pytest.mark.parametrize(
    ("kargs", "field"),
    [({"action": "fly"}, "kargs.action"), ({"action": "add", "expiresInDays": -1}, "kargs.expiresInDays"),
     ({"action": "add", "expiresInDays": "soon"}, "kargs.expiresInDays"), ({"action": "add", "name": 5}, "kargs.name"),
     ({"action": "delete", "id": "one"}, "kargs.id"), ({"action": "add", "username": "no such"}, "kargs.username")],
)
def test_api_token_bad_input_is_400_naming_the_field(server, admin_token, kargs, field) -> None:
    assert field in server.fail("auth/api_token", kargs, admin_token, status=400)


def test_disabled_or_deleted_user_is_refused_at_once(server, admin_token, new_name) -> None:
    for how in ("disable", "delete"):
        name = new_name(how)
        session = server.add_user(admin_token, name, ["admin"])
        api = server.call("auth/api_token", {"action": "add", "username": name}, admin_token)["token"]
        server.call("auth/userList", {}, session)
        server.call("auth/userList", {}, api)
        if how == "disable":
            server.call("auth/userUpdate", {"user": {"username": name, "disabled": True}}, admin_token)
            # Disabling ends the sessions; the token stays but is refused while the user is disabled.
            assert "no such session" in server.fail("auth/userList", {}, session, status=401)
            assert "disabled" in server.fail("auth/userList", {}, api, status=401)
            # The right password of a disabled account gets the wrong password's answer.
            right = server.fail("auth/login", {"username": name, "password": "user-password-1"}, status=401)
            assert right.endswith("invalid username or password")
            # Enabled again: the old session does not come back.
            server.call("auth/userUpdate", {"user": {"username": name, "disabled": False}}, admin_token)
            server.fail("auth/userList", {}, session, status=401)
            server.call("auth/userList", {}, api)
        else:
            server.call("auth/userDelete", {"username": name}, admin_token)
            server.fail("auth/userList", {}, session, status=401)
            server.fail("auth/userList", {}, api, status=401)


# -- roles -------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["analyst", "ingest"])
@pytest.mark.parametrize(
    ("call_name", "kargs"),
    [("auth/userList", {}), ("auth/userAdd", {"user": {}}), ("auth/getUser", {"username": "admin"}),
     ("auth/userDelete", {"username": "admin"}), ("auth/api_token", {"action": "list"})],
)
def test_non_admins_may_not_manage_users_or_tokens(server, admin_token, new_name, role, call_name, kargs) -> None:
    token = server.add_user(admin_token, new_name(role), [role])
    message = server.fail(call_name, kargs, token, status=403)
    assert call_name in message and role in message


# -- users ---------------------------------------------------------------------------


def test_user_list_has_every_field(server, admin_token, new_name) -> None:
    name = new_name("list")
    server.call("auth/dataPolicyAdd", {"policy": {"name": name, "filters": {"event": "@customer:acme"}}}, admin_token)
    server.call(
        "auth/userAdd",
        {"user": {"username": name, "password": "long-enough-1", "email": f"{name}@example.com",
                  "firstName": "Ada", "lastName": "Lovelace", "organization": "Acme", "roles": ["analyst"],
                  "dataPolicies": [name], "APIPolicies": None,
                  "preference": {"timezone": {"value": "Europe/Paris", "policy": "GMT"}}}},
        admin_token,
    )
    users = {u["username"]: u for u in server.call("auth/userList", {}, admin_token)["users"]}
    for user in users.values():
        assert set(user) == set(USER_FIELDS)
        for field, kind in USER_FIELDS.items():
            assert isinstance(user[field], kind), field
    new = users[name]
    assert new["lastLogin"] is None and new["rights"] == "analyst" and new["disabled"] is False
    assert new["dataPolicies"] == [name] and new["APIPolicies"] is None
    assert new["preference"]["timezone"] == {"value": "Europe/Paris", "policy": "GMT"}
    assert ISO_FRACTION.fullmatch(new["passwordDate"])
    server.login(name, "long-enough-1")
    after = server.call("auth/getUser", {"username": name}, admin_token)["user"]
    assert ISO_FRACTION.fullmatch(after["lastLogin"])
    assert after == {**new, "lastLogin": after["lastLogin"]}


def test_password_change_moves_password_date(server, admin_token, new_name) -> None:
    name = new_name("pw")
    before = server.call("auth/userAdd", {"user": {"username": name, "password": "first-password"}}, admin_token)
    time.sleep(0.01)
    after = server.call("auth/userUpdate", {"user": {"username": name, "password": "second-password"}}, admin_token)
    assert after["passwordDate"] > before["passwordDate"]
    server.fail("auth/login", {"username": name, "password": "first-password"}, status=401)
    server.login(name, "second-password")
    untouched = server.call("auth/userUpdate", {"user": {"username": name, "email": "a@b.example"}}, admin_token)
    assert untouched["passwordDate"] == after["passwordDate"]


@pytest.mark.parametrize(
    ("user", "field"),
    [
        ({"password": "long-enough-1"}, "kargs.user.username"),
        ({"username": "has space", "password": "long-enough-1"}, "kargs.user.username"),
        ({"username": "x" * 129, "password": "long-enough-1"}, "kargs.user.username"),
        ({"username": "shortpw", "password": "short"}, "kargs.user.password"),
        ({"username": "badrole", "password": "long-enough-1", "roles": ["wizard"]}, "kargs.user.roles[0]"),
        ({"username": "badroles", "password": "long-enough-1", "roles": "admin"}, "kargs.user.roles"),
        ({"username": "bademail", "password": "long-enough-1", "email": 42}, "kargs.user.email"),
        ({"username": "bademail2", "password": "long-enough-1", "email": "not-an-address"}, "kargs.user.email"),
        ({"username": "longname", "password": "long-enough-1", "firstName": "a" * 101}, "kargs.user.firstName"),
        ({"username": "ctrl", "password": "long-enough-1", "lastName": "a\nb"}, "kargs.user.lastName"),
        ({"username": "flag", "password": "long-enough-1", "disabled": "yes"}, "kargs.user.disabled"),
        ({"username": "pol", "password": "long-enough-1", "dataPolicies": {}}, "kargs.user.dataPolicies"),
        ({"username": "pol2", "password": "long-enough-1", "APIPolicies": [0] * 101}, "kargs.user.APIPolicies"),
        ({"username": "tz", "password": "long-enough-1",
          "preference": {"timezone": {"value": "Mars/Olympus"}}}, "kargs.user.preference.timezone.value"),
        ({"username": "prof", "password": "long-enough-1", "profile": [1]}, "kargs.user.profile"),
        ({"username": "big", "password": "long-enough-1", "profile": {"x": "a" * 20000}}, "kargs.user.profile"),
        ({"username": "extra", "password": "long-enough-1", "isRoot": True}, "kargs.user.isRoot"),
    ],
)
def test_user_add_validates_every_field(server, admin_token, user, field) -> None:
    message = server.fail("auth/userAdd", {"user": user}, admin_token, status=400)
    assert message.startswith(f"auth/userAdd: {field}: "), message


def test_user_add_without_user_object_is_400(server, admin_token) -> None:
    assert "kargs.user" in server.fail("auth/userAdd", {}, admin_token, status=400)
    assert "kargs.user" in server.fail("auth/userAdd", {"user": "bob"}, admin_token, status=400)


def test_duplicate_user_is_409_and_unknown_user_404(server, admin_token, new_name) -> None:
    name = new_name("dup")
    server.call("auth/userAdd", {"user": {"username": name, "password": "long-enough-1"}}, admin_token)
    assert "already exists" in server.fail(
        "auth/userAdd", {"user": {"username": name, "password": "long-enough-1"}}, admin_token, status=409
    )
    assert "no user named" in server.fail("auth/getUser", {"username": "nobody0"}, admin_token, status=404)
    assert "no user named" in server.fail("auth/userDelete", {"username": "nobody0"}, admin_token, status=404)


def test_the_last_admin_cannot_be_deleted_disabled_or_demoted(start_server) -> None:
    srv = start_server()
    token = srv.login()
    for call_name, kargs in [
        ("auth/userDelete", {"username": "admin"}),
        ("auth/userUpdate", {"user": {"username": "admin", "disabled": True}}),
        ("auth/userUpdate", {"user": {"username": "admin", "roles": ["analyst"]}}),
    ]:
        assert "no enabled user with the admin role" in srv.fail(call_name, kargs, token, status=409)
    srv.call("auth/userList", {}, token)  # still an admin
    # With a second admin, the first may go.
    srv.call("auth/userAdd", {"user": {"username": "admin2", "password": "long-enough-1", "roles": ["admin"]}}, token)
    srv.call("auth/userDelete", {"username": "admin"}, token)
    token2 = srv.login("admin2", "long-enough-1")
    srv.fail("auth/userDelete", {"username": "admin2"}, token2, status=409)


# -- the clients' own request forms (ingext_api, fluency-go, ingext-api) ---------------


def test_user_add_as_the_clients_send_it_without_a_password(server, admin_token, new_name) -> None:
    name = new_name("oauth")
    # The clients' UserEntry as Go marshals it: no password, OAuth fields, the name copied into email.
    entry = {"username": name, "email": name, "firstName": "Jo", "organization": "Acme", "roles": ["analyst"],
             "oauthProvider": "Azure AD", "oauthFlag": True}
    added = server.call("auth/userAdd", {"user": entry}, admin_token)
    assert added["passwordSet"] is False and "no password" in added["note"] and "seclake user passwd" in added["note"]
    got = server.call("auth/getUser", {"username": name}, admin_token)["user"]
    assert (got["oauthProvider"], got["oauthFlag"], got["email"], got["roles"]) == ("Azure AD", True, name, ["analyst"])
    # No password: any password is refused, exactly as a wrong one would be.
    refused = server.fail("auth/login", {"username": name, "password": "any-password-1"}, status=401)
    wrong = server.fail("auth/login", {"username": "admin", "password": "any-password-1"}, status=401)
    assert refused.replace(name, "X") == wrong.replace("admin", "X")
    server.call("auth/userUpdate", {"user": {"username": name, "password": "now-it-has-one"}}, admin_token)
    server.login(name, "now-it-has-one")
    assert server.call("auth/getUser", {"username": name}, admin_token)["user"]["passwordSet"] is True


def test_api_tokens_as_the_clients_send_them(server, admin_token, new_name) -> None:
    name = new_name("ctok")
    # tokenRequest{Action, Args{Entry}} as the Go client marshals it (zero times, null policies included).
    entry = {"name": name, "description": "for the CLI", "disabled": False, "roles": ["analyst"],
             "dataPolicies": None, "APIPolicies": None, "lastAccess": 0,
             "createdOn": "0001-01-01T00:00:00Z", "updatedOn": "0001-01-01T00:00:00Z"}
    secret = server.call("auth/api_token", {"action": "add", "args": {"entry": entry, "flag": False}}, admin_token)["token"]
    # The token acts with the roles it was given: an admin's analyst token may search but not manage users.
    assert "admin permission" in server.fail("auth/userList", {}, secret, status=403)
    listed = server.call("auth/api_token", {"action": "list"}, admin_token)["entries"]
    mine = [t for t in listed if t["name"] == name]
    assert len(mine) == 1 and isinstance(mine[0]["id"], str) and mine[0]["id"].isdigit()
    assert (mine[0]["description"], mine[0]["roles"], mine[0]["disabled"]) == ("for the CLI", ["analyst"], False)
    assert isinstance(mine[0]["lastAccess"], int) and "token" not in mine[0]
    # Delete by name, as the clients do (args.id holds the name; args.entry.name in another version).
    server.call("auth/api_token", {"action": "delete", "args": {"id": name}}, admin_token)
    assert "revoked" in server.fail("auth/userList", {}, secret, status=401)
    again = server.call("auth/api_token", {"action": "add", "args": {"entry": {"name": name}}}, admin_token)
    server.call("auth/api_token", {"action": "delete", "args": {"entry": {"name": name}}}, admin_token)
    assert "revoked" in server.fail("auth/userList", {}, again["token"], status=401)
    # And by the string id the list gives.
    third = server.call("auth/api_token", {"action": "add", "name": name}, admin_token)
    server.call("auth/api_token", {"action": "delete", "args": {"id": third["id"]}}, admin_token)
    assert "no active API token named" in server.fail(
        "auth/api_token", {"action": "delete", "args": {"id": name}}, admin_token, status=404)


def test_a_token_cannot_widen_its_users_roles(server, admin_token, new_name) -> None:
    name = new_name("narrow")
    analyst = server.add_user(admin_token, name, ["analyst"])
    err = server.fail("auth/api_token", {"action": "add", "args": {"entry": {"name": "x", "roles": ["admin"]}}},
                      analyst, status=403)
    assert "admin permission" in err  # managing tokens needs admin in the first place
    # An admin making a token for the analyst: only the analyst's own roles.
    assert "can only narrow" in server.fail(
        "auth/api_token", {"action": "add", "username": name, "roles": ["admin"]}, admin_token, status=400)


# -- sessions end with what made them: logout, password, roles ---------------------------


def test_logout_ends_the_session_on_the_server(server, admin_token, new_name) -> None:
    session = server.add_user(admin_token, new_name("bye"), ["analyst"])
    server.call("ds/eventwatch_bucket_search", {"options": {}}, session)
    assert server.call("auth/logout", {}, session) == {"loggedOut": True}
    assert "no such session" in server.fail("ds/eventwatch_bucket_search", {"options": {}}, session, status=401)
    # Again, or with no token at all: the same answer, nothing told.
    assert server.call("auth/logout", {}, session) == server.call("auth/logout", {}) == {"loggedOut": True}


def test_password_or_role_change_ends_the_users_sessions(server, admin_token, new_name) -> None:
    name = new_name("moved")
    first = server.add_user(admin_token, name, ["analyst"])
    server.call("auth/userUpdate", {"user": {"username": name, "password": "another-password-2"}}, admin_token)
    server.fail("ds/eventwatch_bucket_search", {"options": {}}, first, status=401)
    second = server.login(name, "another-password-2")
    server.call("auth/userUpdate", {"user": {"username": name, "firstName": "Same"}}, admin_token)
    server.call("ds/eventwatch_bucket_search", {"options": {}}, second)  # other fields: the session stays
    server.call("auth/userUpdate", {"user": {"username": name, "roles": ["analyst", "ingest"]}}, admin_token)
    server.fail("ds/eventwatch_bucket_search", {"options": {}}, second, status=401)


def test_an_admin_unlocks_a_locked_user(server, admin_token, new_name) -> None:
    name = new_name("locked")
    server.add_user(admin_token, name, ["analyst"])
    for _ in range(10):
        server.fail("auth/login", {"username": name, "password": "wrong-password"}, status=401)
    server.fail("auth/login", {"username": name, "password": "user-password-1"}, status=429)
    assert server.call("auth/userUnlock", {"username": name}, admin_token) == {"username": name, "cleared": 1}
    server.login(name, "user-password-1")
    analyst = server.login(name, "user-password-1")
    assert "admin permission" in server.fail("auth/userUnlock", {"username": name}, analyst, status=403)


# -- address lockouts, proxies -----------------------------------------------------


def _guess(srv, times: int, forwarded: str | None = None) -> None:
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    for i in range(times):
        srv.fail("auth/login", {"username": f"guess{i}", "password": "wrong-password"}, status=401, headers=headers)


def _login_status(srv, forwarded: str | None = None) -> int:
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    return status_of(srv.post("auth/login", {"username": "admin", "password": "admin-test-password"}, headers=headers))


def test_an_address_lockout_is_lifted_by_user_unlock_and_by_address_unlock(start_server) -> None:
    srv = start_server(login_address_max_failures=3)
    admin = srv.login()
    _guess(srv, 3)
    r = srv.post("auth/login", {"username": "admin", "password": "admin-test-password"})
    assert status_of(r) == 429 and "from this address (127.0.0.1)" in r.json()["error"]
    # The admin was refused there: unlocking the admin lifts the address's lockout.
    assert srv.call("auth/userUnlock", {"username": "admin"}, admin)["cleared"] >= 2
    srv.login()
    _guess(srv, 3)
    assert _login_status(srv) == 429
    assert srv.call("auth/addressUnlock", {"address": "127.0.0.1"}, admin) == {"address": "127.0.0.1", "cleared": 5}
    srv.login()
    assert "kargs.address" in srv.fail("auth/addressUnlock", {"address": "not an address"}, admin, status=400)
    analyst = srv.add_user(admin, "unlock-analyst", ["analyst"])
    assert "admin permission" in srv.fail("auth/addressUnlock", {"address": "127.0.0.1"}, analyst, status=403)
    details = [e["detail"] for e in srv.services.audit.recent() if e["call"] == "auth/addressUnlock"]
    assert "address 127.0.0.1 unlocked (5 lockout counter(s) cleared)" in details
    # Operators see each lockout start and each refusal it caused.
    metrics = srv.http.get("/metrics").text
    assert 'seclake_login_lockouts_total{scope="address"} 2.0' in metrics
    assert 'seclake_logins_locked_out_total{scope="address"} 2.0' in metrics


def test_behind_a_trusted_proxy_each_client_has_its_own_address(start_server) -> None:
    srv = start_server(login_address_max_failures=3, trusted_proxies=["127.0.0.1"])
    _guess(srv, 3, forwarded="203.0.113.5")
    assert _login_status(srv, "203.0.113.5") == 429
    # Another client behind the same proxy is not locked by the first one's guesses.
    assert _login_status(srv, "198.51.100.7") == 200
    # Read right to left: what the client itself wrote in front does not count.
    assert _login_status(srv, "198.51.100.7, 203.0.113.5") == 429
    # Without the header, the proxy's own address.
    assert _login_status(srv) == 200
    logins = [(e["client"], e["outcome"]) for e in srv.services.audit.recent() if e["kind"] == "login"]
    assert logins[:4] == [("127.0.0.1", "OK"), ("203.0.113.5", "ERROR"), ("198.51.100.7", "OK"), ("203.0.113.5", "ERROR")]


def test_forwarded_for_from_an_untrusted_peer_is_ignored(start_server) -> None:
    # No trusted_proxies (the default): the header is the client's word only.
    srv = start_server(login_address_max_failures=3)
    for i in range(3):
        _guess(srv, 1, forwarded=f"192.0.2.{i + 1}")
    assert _login_status(srv, "198.51.100.9") == 429
    assert {e["client"] for e in srv.services.audit.recent() if e["kind"] == "login"} == {"127.0.0.1"}


def test_trusted_proxies_must_be_addresses_or_networks(start_server) -> None:
    import pydantic

    for wrong in (["*"], ["proxy.example.com"], ["10.0.0.0/33"]):
        with pytest.raises(pydantic.ValidationError, match="trusted_proxies"):
            start_server(trusted_proxies=wrong)


# -- deleted tokens, logins in the audit ---------------------------------------------


def test_a_deleted_token_leaves_the_list_and_stays_in_the_audit(server, admin_token, new_name) -> None:
    name = new_name("gone")
    added = server.call("auth/api_token", {"action": "add", "args": {"entry": {"name": name}}}, admin_token)
    server.call("auth/api_token", {"action": "delete", "args": {"id": name}}, admin_token)
    for key in ("entries", "tokens"):
        assert name not in [t["name"] for t in server.call("auth/api_token", {"action": "list"}, admin_token)[key]]
    # Only asked for, and then shown revoked.
    revoked = server.call("auth/api_token", {"action": "list", "revoked": True}, admin_token)["entries"]
    assert [(t["id"], t["state"], t["disabled"]) for t in revoked if t["name"] == name] == [(added["id"], "revoked", True)]
    assert "kargs.revoked" in server.fail("auth/api_token", {"action": "list", "revoked": "yes"}, admin_token, status=400)
    server.services.audit.flush()
    details = [e["detail"] for e in server.services.audit.recent(500) if e["call"] == "auth/api_token"]
    assert f"API token {added['id']} of 'admin' deleted" in details


def test_a_login_attempt_is_audited_with_the_name_it_was_made_for(server) -> None:
    server.fail("auth/login", {"username": "evil\x1b[2J\nname\x7f", "password": "wrong-password"}, status=401)
    server.login()
    entries = server.services.audit.recent(4)
    assert [(e["kind"], e["username"], e["outcome"]) for e in entries] == [
        ("call", "admin", "OK"), ("login", "admin", "OK"),
        ("call", "evil[2Jname", "ERROR"), ("login", "evil[2Jname", "ERROR"),
    ]
