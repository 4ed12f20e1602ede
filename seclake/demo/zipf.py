"""Zipf-skewed sampling: a few values are very common, most are rare.

Real logs look like this (one busy file server, a long tail of laptops), and
the skew is what makes facets and "top N" views worth looking at.
"""

from __future__ import annotations

from bisect import bisect
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class Zipf(Generic[T]):
    """Draws ``values[k]`` with probability proportional to ``1 / (k + 1) ** s``.

    The first value is the most common. Draws go through the caller's
    ``random`` function so one seeded generator drives a whole run.
    """

    __slots__ = ("values", "_cum", "_total")

    def __init__(self, values: Sequence[T], s: float = 1.1) -> None:
        if not values:
            raise ValueError("Zipf needs at least one value")
        self.values: tuple[T, ...] = tuple(values)
        cum: list[float] = []
        acc = 0.0
        for k in range(len(self.values)):
            acc += 1.0 / (k + 1) ** s
            cum.append(acc)
        # The last bound is infinite so a draw that rounds up to the total
        # still lands on the last value instead of past the end.
        cum[-1] = float("inf")
        self._cum = cum
        self._total = acc

    def __len__(self) -> int:
        return len(self.values)

    def draw(self, random: Callable[[], float]) -> T:
        # bisect is C code, so one draw costs about as much as one random().
        return self.values[bisect(self._cum, random() * self._total)]

    def probability(self, index: int) -> float:
        prev = self._cum[index - 1] if index else 0.0
        upper = self._total if index == len(self.values) - 1 else self._cum[index]
        return (upper - prev) / self._total
