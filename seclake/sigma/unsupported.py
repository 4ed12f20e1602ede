"""The one reason a Sigma rule is not imported: it asks for something seclake cannot run as meant."""

from __future__ import annotations


class Unsupported(Exception):
    """A rule that cannot run as Sigma means it; ``reason`` is the short text the skip report counts by.

    Skipping is the answer, never an approximation: a rule imported with a
    construct read another way would fire on the wrong records, or never.
    """

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
