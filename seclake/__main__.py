"""``python -m seclake``: the same as the ``seclake`` command.

The command line is imported only when this runs as the program: the
worker processes that build splits and parse lines are spawned, and a
spawned process imports the program's main module first. With the command
line imported at the top, every worker spent ~0.5 s of CPU importing it
(the whole service) before its first job; an import command starts three.
The ``seclake`` script points here for the same reason.
"""


def run() -> None:
    from seclake.cli import main

    main()


if __name__ == "__main__":
    run()
