"""Running a ``seclake`` command in the test's process, the way a shell would."""

from __future__ import annotations

from typer.testing import CliRunner

from seclake.cli import app
from tests.conftest import ADMIN_PASSWORD

_runner = CliRunner()


def run(*args: str, input: str | None = None, env: dict[str, str | None] | None = None):
    """``seclake <args>``; the first admin's password comes from the environment
    unless ``env`` unsets it (a value of None unsets a variable)."""
    return _runner.invoke(app, list(args), input=input, env={"SECLAKE_ADMIN_PASSWORD": ADMIN_PASSWORD, **(env or {})})
