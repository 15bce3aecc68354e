"""What the report's figures show: every panel (none dropped), one line or panel per experiment
and per VARIANTS cell, named; SIGN runs kept out of the naming game's figures; the flip line,
standard-error bands, significance marks and heatmap values."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import Any

from helpers import ROOT, Quiet, run_experiment

from agentsim.analysis.recorded import find_experiments
from agentsim.analysis.report import build_report, significance
from agentsim.games.naming import NamingGame
from agentsim.games.naming.recorded import choices
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.scenario_files import load_scenario


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def _grid(scenario: Any, variants: tuple[dict[str, Any], ...], out: Path, runs: int = 2) -> None:
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, seed=1, runs=runs, variants=variants), Quiet())
    experiment.open()
    asyncio.run(experiment.run())


def test_variants_cells_are_reported_apart_and_named(tmp_path: Path) -> None:
    game = NamingGame(agents=8, names=("Q", "M"), memory_length=5, max_rounds=6)
    _grid(game, ({"memory_length": 2}, {"memory_length": 5}), tmp_path / "grid")
    experiments = find_experiments(tmp_path)
    assert [experiment.label for experiment in experiments] == ["grid [memory_length=2]", "grid [memory_length=5]"]
    assert [experiment.params["memory_length"] for experiment in experiments] == [2, 5]
    assert all(len(experiment.runs) == 2 for experiment in experiments)  # 4 runs, 2 per cell

    build_report(tmp_path)
    success = _rows(tmp_path / "report" / "fig1a_success_rate.csv")
    assert {row["experiment"] for row in success} == {"grid [memory_length=2]", "grid [memory_length=5]"}
    assert all(row["runs"] == "2" for row in success)
    consensus = _rows(tmp_path / "report" / "fig2a_consensus_names.csv")
    assert {row["experiment"] for row in consensus} == {"grid [memory_length=2]", "grid [memory_length=5]"}
    assert sum(int(row["runs_with_consensus"]) for row in consensus) == 4
    usage = _rows(tmp_path / "report" / "table_usage.csv")  # each cell's calls, named (it said "." twice)
    assert [row["experiment"] for row in usage] == ["grid [memory_length=2]", "grid [memory_length=5]"]
    assert sum(int(row["decisions"]) for row in usage) == sum(len(choices(experiment, fallbacks=True)) for experiment in experiments)


def test_fig3a_draws_every_panel_with_the_flip_line(tmp_path: Path) -> None:
    """Six panels (three N, two directions): MAX_PANELS = 4 used to drop two without a word."""
    base = NamingGame(agents=8, names=("Q", "M"), memory_length=3, committed=3, committed_mode="replace",
                      stop_at="flip", max_rounds=4)
    for agents in (6, 8, 10):
        for majority, alternative in (("M", "Q"), ("Q", "M")):
            scenario = base.with_params(agents=agents, majority_name=majority, committed_name=alternative)
            run_experiment(scenario, tmp_path / f"n{agents}_{majority}", seed=1)
    build_report(tmp_path)
    rows = _rows(tmp_path / "report" / "fig3a_alternative_production.csv")
    panels = {(row["condition"], row["majority"], row["alternative"]) for row in rows}
    assert len(panels) == 6
    assert {condition for condition, _m, _a in panels} == {"N=6, H=3", "N=8, H=3", "N=10, H=3"}
    assert all(row["sem"] != "" for row in rows)
    html = (tmp_path / "report" / "report.html").read_text()
    assert "flip criterion" in html


def test_sign_runs_stay_out_of_the_naming_game_figures(tmp_path: Path) -> None:
    """The mixed-model SIGN example is a SignGame under another name: its runs are SIGN's."""
    scenario, _module = load_scenario(ROOT / "examples" / "mixed_sign_models.py")
    run_experiment(scenario.with_params(agents=8, max_rounds=4), tmp_path / "mixed", seed=1)
    naming = NamingGame(agents=8, names=("Q", "M"), max_rounds=4)
    run_experiment(naming, tmp_path / "naming", seed=1)
    index = build_report(tmp_path)
    assert "sign" in index["sections"]
    success = _rows(tmp_path / "report" / "fig1a_success_rate.csv")
    assert {row["experiment"] for row in success} == {"naming"}
    bias = _rows(tmp_path / "report" / "table_s1_individual_bias.csv")
    assert all("C1" not in row["pool"] for row in bias)


def test_significance_marks() -> None:
    assert [significance(p) for p in (0.0001, 0.004, 0.03, 0.2, None, float("nan"))] == \
        ["***", "**", "*", "n.s.", "n.s.", "n.s."]


def test_strategy_heatmap_has_every_memory_length_and_the_values(tmp_path: Path) -> None:
    scenario, _module = load_scenario(ROOT / "scenarios" / "strategies.py")
    run_experiment(scenario.with_overrides({"max_rounds": "20"}), tmp_path / "probe", seed=1)
    build_report(tmp_path)
    rows = _rows(tmp_path / "report" / "figs8_strategy_heatmaps.csv")
    lengths = {int(row["memory_length"]) for row in rows}
    assert lengths == set(range(1, max(lengths) + 1))
    html = (tmp_path / "report" / "report.html").read_text()
    assert "written in it" in html
