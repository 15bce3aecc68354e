"""Games that exist as families, written again as one file on the game layer
(scenarios/prisoners_dilemma_onefile.py, scenarios/stag_hunt_onefile.py): the layer proven on
games whose recordings are known."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run_experiment

from agentsim.games.evolution import StagHunt
from agentsim.scenario_files import load_scenario


def _recorded(path: Path, out: Path, overrides: dict[str, str]) -> tuple[list[tuple[Any, ...]], int]:
    """The moves of a stand-in experiment of the scenario file (seed 1, two runs) and its calls."""
    scenario, _module = load_scenario(path)
    run_experiment(scenario.with_overrides(overrides), out, seed=1, runs=2)
    connection = sqlite3.connect(out / "agentsim.db")
    moves = sorted(connection.execute("SELECT run, t, agent, action, payoff, fallback FROM moves"))
    (calls,) = connection.execute("SELECT count(*) FROM decisions").fetchone()
    connection.close()
    return moves, calls


@pytest.mark.parametrize("overrides", [
    {},
    {"agents": "7", "max_rounds": "12", "reputation_window": "1"},  # one player sits each round out
    {"agents": "10", "max_rounds": "8", "temptation": "6", "reward": "4", "punishment": "2", "sucker": "1",
     "standin.noise": "0.3", "standin.invalid_rate": "0.4", "standin.threshold": "0.8", "standin.trusting": "false"},
], ids=["defaults", "odd-population", "other-payoffs-and-dice"])
def test_the_prisoners_dilemma_in_one_file_records_the_familys_moves(tmp_path: Path, overrides: dict[str, str]) -> None:
    """On the stand-in, the one-file game and the family `agentsim/games/dilemma` record the same
    moves (run, t, agent, action, payoff, fallback) and as many calls, re-asks included: the
    layer matches pairs as the family's `RoundPairing` does (its tables' dice never draw from
    the run's generator), reputations are read from what each player keeps (`Round.keep`),
    and the file's stand-in part is the family's rule with the same dice from each call's seed.
    The prompts differ (the layer words them), which the stand-in does not read."""
    family = _recorded(ROOT / "scenarios" / "prisoners_dilemma.py", tmp_path / "family", overrides)
    onefile = _recorded(ROOT / "scenarios" / "prisoners_dilemma_onefile.py", tmp_path / "onefile", overrides)
    assert family[0], "the family recorded no moves"
    assert onefile == family
    assert any(action == "D" for *_, action, _payoff, _fallback in family[0])


def test_the_stag_hunt_in_one_file_keeps_partners_and_pays_by_the_familys_payoffs(tmp_path: Path) -> None:
    """The family's Stag Hunt is played over generations (strategies and norms written first, the
    best half surviving, newcomers inheriting), which is no layer game, so its recordings are
    not this file's: what the file re-expresses is one game of it, whose rules are checked
    here against the family's own: partners drawn once and kept for the game, and each
    hunter paid `StagHunt.payoffs(mine, theirs)` with the same parameters."""
    scenario, _module = load_scenario(ROOT / "scenarios" / "stag_hunt_onefile.py")
    run_experiment(scenario.with_overrides({"agents": "6"}), tmp_path / "out", seed=3, runs=2)
    family = StagHunt(agents=6)
    connection = sqlite3.connect(tmp_path / "out" / "agentsim.db")
    lines = [(run, json.loads(stats)) for run, stats in connection.execute("SELECT run, stats FROM rounds ORDER BY run, round")]
    connection.close()
    checked, pairs_by_run = 0, {}
    for run, line in lines:
        (group,) = line["groups"]
        pairs = group["data"]["pairs"]
        assert pairs_by_run.setdefault(run, pairs) == pairs, "partners are kept for the whole game"
        hunted = {player: action for player, _move, _kind, action, _fallback in group["moves"]}
        paid = dict(group["payoffs"])
        for first, second in pairs:
            assert paid[first] == family.payoffs(hunted[first], hunted[second])
            assert paid[second] == family.payoffs(hunted[second], hunted[first])
            checked += 2
    assert len(lines) == 16 and checked == 16 * 6
    assert {action for _run, line in lines for *_, action, _fallback in line["groups"][0]["moves"]} == {"STAG", "HARE"}
