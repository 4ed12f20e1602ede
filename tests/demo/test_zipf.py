from __future__ import annotations

import random
from collections import Counter

import pytest

from seclake.demo.zipf import Zipf


def test_first_values_dominate_and_frequencies_follow_the_law() -> None:
    z = Zipf(list("abcdefghij"), s=1.2)
    rnd = random.Random(1).random
    n = 200_000
    counts = Counter(z.draw(rnd) for _ in range(n))
    assert counts.most_common(1)[0][0] == "a"
    for i, v in enumerate(z.values):
        assert counts[v] / n == pytest.approx(z.probability(i), abs=0.01)
    assert sum(z.probability(i) for i in range(len(z))) == pytest.approx(1.0)


def test_long_tail_is_reachable() -> None:
    z = Zipf(range(500), s=1.0)
    rnd = random.Random(2).random
    seen = {z.draw(rnd) for _ in range(100_000)}
    assert len(seen) > 450


def test_draws_never_run_past_the_end() -> None:
    z = Zipf(["x", "y"])
    assert z.draw(lambda: 0.9999999999999999) == "y"
    assert z.draw(lambda: 0.0) == "x"


def test_one_value_and_no_values() -> None:
    assert Zipf(["only"]).draw(random.random) == "only"
    with pytest.raises(ValueError):
        Zipf([])
