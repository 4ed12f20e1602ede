"""Destination secrets sealed with the deployment's key: they open only with
that key and under the destination's own name; the database holds no plain text."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import select

from seclake.notify.cipher import SecretBox
from seclake.notify.destination import DestinationRow


def test_seal_and_open() -> None:
    box = SecretBox(os.urandom(32))
    sealed = box.seal("hook", {"secret": "s3cret-value"})
    assert b"s3cret" not in sealed and box.open("hook", sealed) == {"secret": "s3cret-value"}
    with pytest.raises(ValueError, match="do not open"):
        box.open("other", sealed)  # copied onto another destination's row
    with pytest.raises(ValueError, match="do not open"):
        SecretBox(os.urandom(32)).open("hook", sealed)  # another deployment's key
    assert box.open("hook", None) == {}


def test_the_database_holds_no_secret_in_plain_text(start_server) -> None:
    srv = start_server()
    token = srv.login()
    srv.call("notify/destination_dao", {"action": "add", "destination": {
        "name": "pager", "kind": "pagerduty", "routingKey": "R0UT1NG-KEY-VALUE"}}, token)
    with srv.services.db.session() as s:
        row = s.scalars(select(DestinationRow)).one()
        assert "R0UT1NG" not in str(row.config) and b"R0UT1NG" not in row.secret
    # An update that leaves the key out keeps it.
    srv.call("notify/destination_dao", {"action": "update", "destination": {"name": "pager", "description": "d"}},
             token)
    assert srv.services.alerting.targets()["pager"].get("routingKey") == "R0UT1NG-KEY-VALUE"
