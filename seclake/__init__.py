"""seclake: a self-hosted security analytics query service."""

__version__ = "0.1.0"

# Before any other seclake module is imported: a compiled module whose source
# changed since its build runs from the source (native.py).
from seclake import native as _native  # noqa: E402

_native.install()
