"""Every setting is documented in the README's configuration table; defaults that depend on the machine."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from seclake.settings import Settings, load_settings

README = Path(__file__).resolve().parent.parent / "README.md"


def documented() -> dict[str, str]:
    """Setting name -> env name, from rows like | `name` | `SECLAKE_NAME` | default | description |."""
    rows = re.findall(r"^\|\s*`([a-z_]+)`\s*\|\s*`(SECLAKE_[A-Z_]+)`\s*\|[^|\n]*\|\s*[^|\n]*\S[^|\n]*\|\s*$",
                      README.read_text(), re.M)
    return dict(rows)


def test_every_setting_is_in_the_readme_table() -> None:
    table = documented()
    missing = [name for name in Settings.model_fields if name not in table]
    assert not missing, f"settings missing from the README configuration table: {missing}"
    for name in Settings.model_fields:
        assert table[name] == f"SECLAKE_{name.upper()}", name


def test_the_readme_documents_no_setting_that_does_not_exist() -> None:
    assert set(documented()) <= set(Settings.model_fields)


@pytest.mark.parametrize(("cores", "workers"), [(1, 0), (2, 0), (3, 0), (4, 2), (6, 4), (64, 4)])
def test_parse_workers_follow_the_cores_unless_set(monkeypatch, tmp_path, cores, workers) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert load_settings(data_dir=tmp_path).effective_parse_workers == workers
    assert load_settings(data_dir=tmp_path, parse_workers=1).effective_parse_workers == 1
    assert load_settings(data_dir=tmp_path, parse_workers=0).effective_parse_workers == 0


@pytest.mark.parametrize("token", ["", "short-token"])
def test_a_metrics_token_too_short_to_keep_a_secret_is_refused(monkeypatch, tmp_path, token) -> None:
    # An empty SECLAKE_METRICS_TOKEN was a token: "Authorization: Bearer " then
    # opened /metrics (rule names, call counts) to any address (issue 39.7).
    monkeypatch.setenv("SECLAKE_METRICS_TOKEN", token)
    with pytest.raises(ValueError, match="metrics_token"):
        load_settings(data_dir=tmp_path)
    monkeypatch.setenv("SECLAKE_METRICS_TOKEN", "s" * 16)
    assert load_settings(data_dir=tmp_path).metrics_token.get_secret_value() == "s" * 16
