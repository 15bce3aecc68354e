"""Every scenario file and example runs, with a fixed seed, on the stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, run_experiment, scenario_files

from agentsim.scenario_files import load_scenario
from agentsim.store import Store

FILES = scenario_files()


@pytest.mark.parametrize("path", FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_scenario_file_runs(tmp_path: Path, path: Path) -> None:
    scenario, _module = load_scenario(path)
    quick = scenario.with_overrides({"max_rounds": "4"})
    summaries = run_experiment(quick, tmp_path / "out", seed=1, runs=2)
    assert [summary["status"] for summary in summaries] == ["done", "done"]
    assert all(summary["interactions"] > 0 for summary in summaries)
    assert (tmp_path / "out" / "summary.json").is_file()


def test_the_prize_example_changes_payoff_and_prompt(tmp_path: Path) -> None:
    scenario, _module = load_scenario(ROOT / "examples" / "prize_convention.py")
    scenario = scenario.with_params(names=("F", "M"), agents=10, max_rounds=30, stop_at="consensus")
    (summary,) = run_experiment(scenario, tmp_path / "out", seed=4)
    store = Store(tmp_path / "out")
    payoffs = {payoff for (payoff,) in store.rows("SELECT DISTINCT payoff FROM moves")}
    t, agent = next(iter(store.rows("SELECT t, agent FROM calls LIMIT 1")))
    prompt = store.messages(scenario.for_experiment(4), 1, t, agent)[0].content
    store.close()
    assert "If both Players play M, the reward is doubled: +200 points each." in prompt
    if summary["consensus_name"] == "M":
        assert 200 in payoffs
    assert payoffs <= {200, 100, -50}
