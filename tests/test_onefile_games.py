"""A game that exists as a family, written again as one file on the game layer
(scenarios/stag_hunt_onefile.py): the layer proven on a game whose rules are known. (The
Prisoner's Dilemma was written both ways too; it now has one implementation, on the layer:
agentsim/games/dilemma.)"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from helpers import ROOT, run_experiment

from agentsim.games.evolution import StagHunt
from agentsim.scenario_files import load_scenario


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
