from __future__ import annotations

import pytest

from seclake.errors import ValidationFailed
from seclake.ingest.vendor import validate_vendor


@pytest.mark.parametrize("name", ["fortigate", "palo-alto", "ms.windows", "a", "A1_b", "x" * 64])
def test_valid(name: str) -> None:
    assert validate_vendor(name) == name


@pytest.mark.parametrize("name", ["", "-x", ".hidden", "a/b", "../etc", "a b", "x" * 65, "é", "a\n", None])
def test_invalid(name: object) -> None:
    with pytest.raises(ValidationFailed) as info:
        validate_vendor(name)  # type: ignore[arg-type]
    assert info.value.field == "vendor"
