"""The analysis subcommands, called as `python -m agentsim NAME ...` would call them (in
process, for speed; `test_report.py` runs `report` in a subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, run_experiment

from agentsim.cli import main
from agentsim.scenario_files import load_scenario


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recorded")
    for name, overrides, runs in (("collective_bias.py", {"max_rounds": "30"}, 3),
                                  ("strategies.py", {"max_rounds": "10", "probe_lengths": "0,1"}, 1)):
        scenario, _module = load_scenario(ROOT / "scenarios" / name)
        run_experiment(scenario.with_overrides(overrides), root / name.removesuffix(".py"), seed=1, runs=runs)
    return root


def test_bias_prints_the_test_and_the_consensus_counts(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bias", str(recorded)]) == 0
    out = capsys.readouterr().out
    assert "individual stand-in (favours M) [M Q]: M=" in out and "binomial p=" in out and "(base 2)" in out
    assert "collective stand-in (favours M) [M Q]:" in out


def test_strategies_prints_each_configuration(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategies", str(recorded), "--name", "M"]) == 0
    *lines, rate = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 + 4  # the empty memory, then the four (own, partner) pairs
    assert all("P(M)=" in line and "exact (stand-in rule)" in line and "p_unbiased=" in line for line in lines)
    assert rate.startswith("fallback rate ")


def test_comprehension_saves_accuracy_beside_the_run(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = recorded / "collective_bias"
    assert main(["comprehension", str(directory), "--agents", "3", "--max-states", "15"]) == 0
    document = json.loads((directory / "analysis" / "comprehension.json").read_text())
    kinds = {entry["question"] for entry in document["accuracy"]}
    assert kinds == {"min_payoff", "max_payoff", "actions", "payoff", "round", "action_i", "points_i", "count_actions",
                     "total_points"}
    assert all(0 <= entry["accuracy"] <= 1 and entry["asked"] > 0 for entry in document["accuracy"])
    assert len(document["agents"]) == 3
    assert "count_actions" in capsys.readouterr().out


def test_unbiased_pool_and_critical_mass_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["unbiased-pool", "--samples", "1000", "--threshold", "0.02", "--tries", "5", "--out", str(tmp_path / "pools")]) == 0
    assert "pool: " in capsys.readouterr().out
    assert json.loads((tmp_path / "pools" / "analysis" / "unbiased_pool.json").read_text())["pool"]
    assert main(["critical-mass", str(ROOT / "scenarios" / "critical_mass_search.py"), "--out", str(tmp_path / "cm"),
                 "--runs", "1", "--set", "agents=8"]) == 0
    out = capsys.readouterr().out
    assert "against M (committed say Q): critical mass" in out and "against Q (committed say M)" in out
    results = json.loads((tmp_path / "cm" / "analysis" / "critical_mass.json").read_text())["results"]
    assert [result["agents"] for result in results] == [8, 8]


@pytest.mark.parametrize(("arguments", "message"), [
    (["bias", "nowhere"], "is not a directory"),
    (["strategies", "."], "no strategy-probe runs"),
    (["comprehension", "."], "holds no agentsim.db"),  # (it made one there, reading '.')
    (["critical-mass", str(ROOT / "scenarios" / "naming_game.py"), "--out", "x"], "two names"),
    (["critical-mass", str(ROOT / "scenarios" / "critical_mass_search.py"), "--out", "x", "--runs", "0"], "--runs must be between 1 and"),
    (["unbiased-pool", "--threshold", "2"], "threshold must be in (0, 1)"),
])
def test_user_errors_are_one_line_and_exit_2(arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(arguments) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error, error
