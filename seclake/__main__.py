"""``python -m seclake``: the same as the ``seclake`` command."""

from seclake.cli import main

# Guarded: the split builder's worker process (spawn) imports the main module.
if __name__ == "__main__":
    main()
