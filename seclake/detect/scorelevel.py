"""Score levels: the label a risk score reads as (``scoreLevel``).

Bands are ``(minimum, label)`` pairs, highest minimum first; a score gets the
label of the first band whose minimum it reaches. A score of zero or less is
labelled ``"0"``: clients exclude it with the must-not filter
``scoreLevel: ["0"]`` (spec section 4, rule 4). The labels are the
original's (client-compat.md); the minimums fit the risk model
(``detect/risk.py``, docs/rules.md): one rule's summary scores that rule's
score, so critical (6000) takes more than any starter rule alone, e.g. two
rules or two tactics; on the demo week 1 summary of 12 is critical and the
attacks rank first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ZERO = "0"
DEFAULT_BANDS: tuple[tuple[int, str], ...] = (
    (6000, "critical"),
    (4500, "serious"),
    (3500, "high"),
    (2000, "medium"),
    (1, "low"),
)
MAX_LABEL = 64

Bands = tuple[tuple[int, str], ...]


def check_bands(raw: Sequence[Any]) -> Bands:
    """Bands from configuration, or ValueError saying which entry is wrong."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or not raw:
        raise ValueError("score bands must be a non-empty list of [minimum, label] pairs")
    bands: list[tuple[int, str]] = []
    for i, entry in enumerate(raw):
        if isinstance(entry, (str, bytes)) or not isinstance(entry, Sequence) or len(entry) != 2:
            raise ValueError(f"score band {i} must be a [minimum, label] pair, not {entry!r}"[:200])
        minimum, label = entry
        if isinstance(minimum, bool) or not isinstance(minimum, int):
            raise ValueError(f"score band {i}: the minimum must be an integer, not {minimum!r}"[:200])
        if minimum < 1:
            raise ValueError(f"score band {i}: the minimum must be at least 1 (scores of 0 or less read {ZERO!r})")
        if not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL:
            raise ValueError(f"score band {i}: the label must be a non-empty string of at most {MAX_LABEL} characters")
        if label == ZERO:
            raise ValueError(f"score band {i}: the label {ZERO!r} is reserved for scores of 0 or less")
        if bands and minimum >= bands[-1][0]:
            raise ValueError(f"score band {i}: minimums must strictly descend, but {minimum} follows {bands[-1][0]}")
        if any(label == seen for _, seen in bands):
            raise ValueError(f"score band {i}: the label {label!r} is used twice")
        bands.append((minimum, label))
    return tuple(bands)


def score_level(score: int | float, bands: Bands = DEFAULT_BANDS) -> str:
    for minimum, label in bands:
        if score >= minimum:
            return label
    # Positive scores below the lowest band, and zero or negative scores.
    return ZERO
