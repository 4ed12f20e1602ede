"""Login on each database, with a clock the test moves."""

from __future__ import annotations

import statistics
import time

import pytest

from seclake.errors import TooManyAttempts, Unauthorized, ValidationFailed

PASSWORD = "admin-test-password"


def fail(services, username: str = "admin", password: str = "wrong-password") -> None:
    with pytest.raises(Unauthorized):
        services.login.login(username, password, "10.0.0.1")


def test_ten_failures_in_the_window_lock_for_the_lockout_time(services, clock) -> None:
    for _ in range(10):
        fail(services)
        clock.advance(seconds=30)
    with pytest.raises(TooManyAttempts) as locked:
        services.login.login("admin", PASSWORD)
    assert 0 < locked.value.retry_after_seconds <= 15 * 60
    clock.advance(minutes=14)
    with pytest.raises(TooManyAttempts):
        services.login.login("admin", PASSWORD)
    clock.advance(minutes=1, seconds=1)
    assert services.login.login("admin", PASSWORD)["status"] == "succeed"


def test_failures_spread_beyond_the_window_do_not_lock(services, clock) -> None:
    for _ in range(15):
        fail(services)
        clock.advance(minutes=2)  # ten failures span more than 15 minutes
    assert services.login.login("admin", PASSWORD)["status"] == "succeed"


def test_success_resets_the_count(services, clock) -> None:
    for _ in range(9):
        fail(services)
    services.login.login("admin", PASSWORD)
    for _ in range(9):
        fail(services)
    assert services.login.login("admin", PASSWORD)["status"] == "succeed"


def test_login_records_last_login_and_audit(services, clock) -> None:
    record = services.login.login("admin", PASSWORD, "192.0.2.7")
    assert record["createdOn"] == "2026-11-21T10:00:00.123000Z"
    assert services.users.get("admin")["lastLogin"] == "2026-11-21T10:00:00.123000Z"
    entry = services.audit.recent(1)[0]
    assert (entry["kind"], entry["username"], entry["client"], entry["outcome"]) == ("login", "admin", "192.0.2.7", "OK")


def test_malformed_credentials_name_the_field(services) -> None:
    with pytest.raises(ValidationFailed, match="username"):
        services.login.login(None, PASSWORD)
    with pytest.raises(ValidationFailed, match="password"):
        services.login.login("admin", 123)


def test_unknown_user_costs_about_as_much_as_a_wrong_password(services) -> None:
    def timed(username: str) -> float:
        samples = []
        for _ in range(5):
            started = time.perf_counter()
            fail(services, username)
            samples.append(time.perf_counter() - started)
        return statistics.median(samples)

    known, unknown = timed("admin"), timed("nobody-at-all")
    assert 0.5 < unknown / known < 2, (known, unknown)
