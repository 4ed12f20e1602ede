"""seclake's errors cross process boundaries (parse workers, Ray actors) as themselves."""

from __future__ import annotations

import pickle

import pytest

from seclake import errors

EXAMPLES = [
    errors.ValidationFailed("type", "must be event or flow"),
    errors.LimitExceeded("fetchLimit", 5000, 1000),
    errors.QueryError("unexpected ')'", position=7, expected="a term"),
    errors.PayloadTooLarge("import body is larger than 10 bytes"),
    errors.Unavailable("no ingest node is running"),
]


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_an_error_pickles_with_its_type_message_and_fields(error, protocol):
    again = pickle.loads(pickle.dumps(error, protocol))
    assert type(again) is type(error) and str(again) == str(error) and again.code == error.code
    assert vars(again) == vars(error) and again.args == error.args
