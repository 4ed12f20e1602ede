"""Vendor names: the ``{vendor}`` of ``POST /api/import/{vendor}``.

The name becomes ``@source`` and a tag on every record of the import, and may
name files or metrics later, so it is held to a plain, path-safe spelling:
a letter or digit, then up to 63 letters, digits, ``_``, ``.`` or ``-``.
"""

from __future__ import annotations

import re

from seclake.errors import ValidationFailed

_VENDOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def validate_vendor(name: str) -> str:
    """The name unchanged when valid, else ``ValidationFailed("vendor", ...)``."""
    if not isinstance(name, str) or _VENDOR.fullmatch(name) is None:
        shown = repr(name)[:80]
        raise ValidationFailed(
            "vendor",
            f"{shown} is not a vendor name: use 1 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit",
        )
    return name
