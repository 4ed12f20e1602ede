"""The password hasher ships OWASP's argon2id parameters (tests/conftest.py lowers them in the test process only)."""

from __future__ import annotations

import subprocess
import sys

from seclake.service.password import PasswordHasher


def test_a_server_hashes_with_owasps_argon2id_parameters() -> None:
    # A fresh interpreter, as `seclake up` is: the module's own parameters, not the suite's.
    made = subprocess.run(
        [sys.executable, "-c", "from seclake.service.password import PasswordHasher as H; print(H(eager=False).hash('x'))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()
    assert made.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    # Such a hash verifies whatever this process's own parameters are (argon2 reads them from the hash).
    assert PasswordHasher(eager=False).verify(made, "x")


def test_a_hash_verifies_only_its_password() -> None:
    hasher = PasswordHasher(eager=False)
    made = hasher.hash("correct horse")
    assert hasher.verify(made, "correct horse") and not hasher.verify(made, "Correct horse")
    assert not hasher.verify("not a hash", "correct horse")
