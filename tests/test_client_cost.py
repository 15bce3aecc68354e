"""The engine's per-call bookkeeping stays off the hot path: prices are read from the
environment once per experiment, not per call, and periodic checkpoints take a bounded share
of a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsim.errors import UserError
from agentsim.llm import prices
from agentsim.replicates import COMMITS_SHARE, commit_interval


def test_a_price_table_is_read_when_an_experiment_opens_and_a_lookup_does_not_read_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps({"client-cost-test-model": [1.0, 2.0]}))
    second.write_text(json.dumps({"client-cost-test-model": [3.0, 4.0]}))
    monkeypatch.setenv("AGENTSIM_PRICES", str(first))
    prices.load_user_prices()
    assert prices.price_of("client-cost-test-model") == (1.0, 2.0)
    monkeypatch.setenv("AGENTSIM_PRICES", str(second))
    assert prices.price_of("client-cost-test-model") == (1.0, 2.0)  # a lookup alone: no environment read
    prices.load_user_prices()  # what the next experiment's open does
    assert prices.price_of("client-cost-test-model") == (3.0, 4.0)
    monkeypatch.setenv("AGENTSIM_PRICES", str(tmp_path / "missing.json"))
    with pytest.raises(UserError, match="AGENTSIM_PRICES"):
        prices.load_user_prices()


def test_periodic_commits_stretch_to_a_bounded_share_of_the_run_and_zero_still_means_every_round() -> None:
    assert commit_interval(1.0, 0.001) == 1.0  # cheap checkpoints: as often as asked
    assert commit_interval(1.0, 0.1) == pytest.approx(0.1 / COMMITS_SHARE)  # 100 ms each: one per 5 s
    assert 0.1 / commit_interval(1.0, 0.1) <= COMMITS_SHARE
    assert commit_interval(0.0, 0.5) == 0.0


def test_a_run_freezes_what_exists_and_collects_less_often_then_gives_the_collector_back() -> None:
    import gc

    from agentsim.collection import YOUNG_THRESHOLD, fewer_collections

    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] >= YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
