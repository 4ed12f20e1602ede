"""Login on each database, with a clock the test moves."""

from __future__ import annotations

import statistics
import time

import pytest

from seclake.errors import TooManyAttempts, Unauthorized
from seclake.service.clock import iso

PASSWORD = "admin-test-password"


ATTACKER = "10.0.0.1"
# The address limit's tests fail a login per guess (an argon2 hash each: ~60 ms):
# 20 shows what 100 (the default) does, five times faster.
FEWER_GUESSES = pytest.mark.settings(login_address_max_failures=20)


def fail(services, username: str = "admin", password: str = "wrong-password", client: str = ATTACKER) -> None:
    with pytest.raises(Unauthorized):
        services.login.login(username, password, client)


def test_ten_failures_in_the_window_lock_for_the_lockout_time(services, clock) -> None:
    for _ in range(10):
        fail(services)
        clock.advance(seconds=30)
    with pytest.raises(TooManyAttempts) as locked:
        services.login.login("admin", PASSWORD, ATTACKER)
    assert 0 < locked.value.retry_after_seconds <= 15 * 60
    clock.advance(minutes=14)
    with pytest.raises(TooManyAttempts):
        services.login.login("admin", PASSWORD, ATTACKER)
    clock.advance(minutes=1, seconds=1)
    assert services.login.login("admin", PASSWORD, ATTACKER).user.username == "admin"


def test_a_stranger_cannot_lock_a_user_out_from_elsewhere(services, clock) -> None:
    for _ in range(10):
        fail(services)
    with pytest.raises(TooManyAttempts):
        services.login.login("admin", PASSWORD, ATTACKER)
    # The admin, from its own address, signs in as ever.
    assert services.login.login("admin", PASSWORD, "192.0.2.10").user.username == "admin"


@FEWER_GUESSES
def test_one_address_guessing_across_usernames_is_locked_out(services, clock) -> None:
    limit = services.settings.login_address_max_failures
    for i in range(limit):
        fail(services, f"user{i}")  # never ten for one name
    with pytest.raises(TooManyAttempts, match="from this address"):
        services.login.login("admin", PASSWORD, ATTACKER)
    assert services.login.login("admin", PASSWORD, "192.0.2.10").user.username == "admin"


def test_an_unlock_or_a_password_reset_ends_the_lockout(services, clock) -> None:
    for _ in range(10):
        fail(services)
    assert services.login.unlock("admin") == 1  # its counter from the one address that failed
    assert services.login.login("admin", PASSWORD, ATTACKER).user.username == "admin"
    for _ in range(10):
        fail(services)
    services.users.set_password("admin", "a-new-password-3")
    assert services.login.login("admin", "a-new-password-3", ATTACKER).user.username == "admin"


def test_old_failure_counters_are_purged(services, clock) -> None:
    from seclake.db.models import LoginFailure  # noqa: PLC0415
    from sqlalchemy import func, select  # noqa: PLC0415

    for i in range(30):
        fail(services, f"someone{i}", client=f"198.51.100.{i}")
    clock.advance(minutes=16)
    fail(services, "late")  # each failure purges counters past the window
    with services.db.session() as s:
        assert s.scalar(select(func.count()).select_from(LoginFailure)) == 2  # late's and its address's


def test_failures_spread_beyond_the_window_do_not_lock(services, clock) -> None:
    for _ in range(15):
        fail(services)
        clock.advance(minutes=2)  # ten failures span more than 15 minutes
    assert services.login.login("admin", PASSWORD).user.username == "admin"


def test_success_resets_the_count(services, clock) -> None:
    for _ in range(9):
        fail(services)
    services.login.login("admin", PASSWORD, ATTACKER)
    for _ in range(9):
        fail(services)
    assert services.login.login("admin", PASSWORD, ATTACKER).user.username == "admin"


def test_login_records_last_login_and_audit(services, clock) -> None:
    signed_in = services.login.login("admin", PASSWORD, "192.0.2.7")
    assert iso(signed_in.session.created_on) == "2026-11-21T10:00:00.123000Z"
    assert iso(services.users.get("admin").last_login) == "2026-11-21T10:00:00.123000Z"
    entry = services.audit.recent(1)[0]
    assert (entry["kind"], entry["username"], entry["client"], entry["outcome"]) == ("login", "admin", "192.0.2.7", "OK")


def test_unknown_user_costs_about_as_much_as_a_wrong_password(shipped_password_cost, services) -> None:
    def timed(username: str) -> float:
        started = time.perf_counter()
        fail(services, username)
        return time.perf_counter() - started

    # In turns: a shared machine's drift (other tests beside this one) weighs on both alike.
    samples: dict[str, list[float]] = {"admin": [], "nobody-at-all": []}
    for _ in range(7):
        for username, taken in samples.items():
            taken.append(timed(username))
    known, unknown = statistics.median(samples["admin"]), statistics.median(samples["nobody-at-all"])
    assert 0.5 < unknown / known < 2, (known, unknown)


def test_a_server_makes_its_stand_in_hash_before_the_first_unknown_login(services, monkeypatch) -> None:
    # Made then, the first unknown user's answer would take a hash longer than
    # a wrong password's: it would tell that the name is unknown.
    import argon2

    hashed = []
    real = argon2.PasswordHasher.hash
    monkeypatch.setattr(argon2.PasswordHasher, "hash", lambda self, *a, **k: hashed.append(1) or real(self, *a, **k))
    fail(services, "nobody-at-all")
    assert hashed == []


def test_a_one_shot_command_makes_the_stand_in_hash_only_if_it_needs_one(database_url, tmp_path, monkeypatch) -> None:
    import argon2

    from seclake.services import Services
    from seclake.settings import load_settings

    made = []
    real = argon2.PasswordHasher.hash
    monkeypatch.setattr(argon2.PasswordHasher, "hash", lambda self, *a, **k: made.append(1) or real(self, *a, **k))
    settings = load_settings(data_dir=tmp_path / "data", database_url=database_url, admin_password=PASSWORD)
    command = Services(settings, one_shot=True)
    try:
        assert made == []  # a command that never checks a password never pays for it
        assert command.hasher.verify_dummy("anything") is False
        assert made == [1]
    finally:
        command.stop()


def _lock_the_address(services, client: str = ATTACKER) -> None:
    # Guesses over many names, never ten of one: only the address counter locks.
    for i in range(services.settings.login_address_max_failures):
        fail(services, f"guess{i}", client=client)
    with pytest.raises(TooManyAttempts, match="from this address"):
        services.login.login("admin", PASSWORD, client)


@FEWER_GUESSES
def test_unlocking_a_user_lifts_the_address_lockout_it_was_refused_by(services, clock) -> None:
    # Behind a proxy every client shares one address: an admin refused
    # there by others' guesses must be able to get the user in again.
    _lock_the_address(services)
    assert services.login.unlock("admin") >= 1
    assert services.login.login("admin", PASSWORD, ATTACKER).user.username == "admin"


@FEWER_GUESSES
def test_unlocking_an_address_ends_every_lockout_from_it(services, clock) -> None:
    _lock_the_address(services)
    for _ in range(10):
        fail(services, "admin", client="192.0.2.50")
    # The address's counter and every name's counter from it (the guesses'
    # and the refused admin's); other addresses' stay.
    assert services.login.unlock_address(ATTACKER) == 2 + services.settings.login_address_max_failures
    assert services.login.login("admin", PASSWORD, ATTACKER).user.username == "admin"
    with pytest.raises(TooManyAttempts):
        services.login.login("admin", PASSWORD, "192.0.2.50")
    assert services.login.unlock_address("192.0.2.50") == 2
    assert services.login.login("admin", PASSWORD, "192.0.2.50").user.username == "admin"
