"""``python -m seclake``: the same as the ``seclake`` command."""

from seclake.cli import main

main()
