"""Score levels: band edges, the "0" level, and hostile band configuration."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from seclake.detect.scorelevel import DEFAULT_BANDS, check_bands, score_level
from seclake.settings import load_settings


@pytest.mark.parametrize(
    ("score", "level"),
    [
        (100000, "critical"), (6000, "critical"), (5999, "serious"), (4500, "serious"), (4499, "high"),
        (3500, "high"), (3499, "medium"), (2000, "medium"), (1999, "low"), (1, "low"), (0.5, "0"),
        (0, "0"), (-1, "0"), (-100000, "0"),
    ],
)
def test_levels_at_band_edges(score, level):
    assert score_level(score, DEFAULT_BANDS) == level


def test_settings_default_matches_the_module_default():
    assert tuple(load_settings().score_bands) == DEFAULT_BANDS


def test_custom_bands_from_settings():
    bands = check_bands(load_settings(score_bands=[[500, "hot"], [100, "warm"]]).score_bands)
    assert [score_level(s, bands) for s in (500, 499, 100, 99, 0)] == ["hot", "warm", "warm", "0", "0"]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ([], "non-empty"),
        ("critical", "non-empty"),
        ([[10, "a"], [10, "b"]], "strictly descend"),
        ([[10, "a"], [20, "b"]], "strictly descend"),
        ([[20, "a"], [10, "a"]], "used twice"),
        ([[0, "a"]], "at least 1"),
        ([[-5, "a"]], "at least 1"),
        ([[10, "0"]], "reserved"),
        ([[10, ""]], "non-empty string"),
        ([[10, "x" * 65]], "at most 64"),
        ([[True, "a"]], "integer"),
        ([[1.5, "a"]], "integer"),
        ([[10]], "pair"),
        (["ab"], "pair"),
        ([[10, 5]], "non-empty string"),
    ],
)
def test_bad_bands_are_refused_with_the_reason(raw, says):
    with pytest.raises(ValueError, match=says):
        check_bands(raw)


def test_bad_bands_stop_the_settings():
    with pytest.raises(ValidationError, match="strictly descend"):
        load_settings(score_bands=[[1, "low"], [8000, "critical"]])
