"""A name read from stored data, turned into a path that stays inside one directory.

seclake derives paths from what it stored: a split's directory from the
catalog's ``dataset`` and ``split_id``, a downloaded file from an object
listing. A database or backup that was altered (a split id
``../../../../victim``) must never make seclake read, write or delete
outside its own directories: issue 39 found retention deleting a directory
outside the data dir, files and all. Every such path is made here, and a
name that is not one plain directory entry, or a path that a symbolic link
leads elsewhere, is refused with what, where and why (``UnsafeName``).
"""

from __future__ import annotations

from pathlib import Path

# The longest name a Linux filesystem takes for one entry, in bytes.
MAX_BYTES = 255


class UnsafeName(ValueError):
    """A stored name that cannot be a path inside its directory; the message says what, where and why."""

    def __init__(self, what: str, value: object, why: str, where: str = ""):
        self.what, self.value, self.why, self.where = what, value, why, where
        shown = repr(value) if len(repr(value)) <= 120 else repr(value)[:117] + "..."
        super().__init__(f"{where + ': ' if where else ''}{what} {shown} {why}")


def problem(name: object) -> str | None:
    """Why ``name`` is not one plain directory entry (None when it is)."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a name"
    if name in ("", ".", ".."):
        return "is not a name (empty, '.' or '..')"
    for bad, said in (("/", "'/'"), ("\\", "a backslash"), ("\0", "a NUL byte")):
        if bad in name:
            return f"holds {said}, so it would reach another directory"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "holds a control character"
    try:
        size = len(name.encode())
    except UnicodeEncodeError:  # a lone surrogate: no file name on disk is spelled so
        return "is not valid UTF-8"
    if size > MAX_BYTES:
        return f"is {size} bytes long (a file name takes at most {MAX_BYTES})"
    return None


def entry(name: object, what: str, where: str = "") -> str:
    """``name`` if it is one plain directory entry; else ``UnsafeName``."""
    why = problem(name)
    if why is not None:
        raise UnsafeName(what, name, why, where)
    return name  # type: ignore[return-value]


def inside(directory: Path, *names: str, what: str, where: str = "") -> Path:
    """``directory / names...``, each name one plain entry, and the result,
    symbolic links followed, still under ``directory`` (itself resolved: a
    data dir on a linked disk is the operator's choice); else ``UnsafeName``."""
    path = directory
    linked = False
    for name in names:
        path = path / entry(name, what, where)
        # Plain names below the directory stay inside it unless one is a link
        # (one lstat each): only then is the whole path resolved (~85 us,
        # 10,000 splits at start would pay 0.85 s).
        linked = linked or path.is_symlink()
    if not linked:
        return path
    root = directory.resolve()
    real = path.resolve()
    if root not in real.parents:  # a name never stands for the directory itself
        raise UnsafeName(what, "/".join(names), f"leads to {real} through a symbolic link, outside {root}", where)
    return path
