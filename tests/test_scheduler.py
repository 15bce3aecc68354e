"""The scheduler: no agent is ever in two encounters at once, under every pairing; rounds
give the same run whatever order answers come back in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import JitteryStandIn, dump, run_experiment, run_model

from agentsim.games.naming import NamingGame
from agentsim.model import PopulationModel
from agentsim.scheduler import Encounter


class WatchedGame(NamingGame):
    """The naming game, checking that an agent drawn into an encounter is in no other one
    until that encounter resolves, and counting how many were open at once."""

    def draw(self, model: PopulationModel, encounter: Encounter) -> Any:
        busy = model.__dict__.setdefault("busy", set())
        for agent in encounter.agents:
            assert agent.index not in busy, f"agent {agent.index} drawn into t={encounter.t} while busy"
            busy.add(agent.index)
        model.__dict__["most_open"] = max(model.__dict__.get("most_open", 0), len(model.scheduler.open) + 1)
        return super().draw(model, encounter)

    def resolve(self, model: PopulationModel, encounter: Encounter, answers: Any) -> Any:
        for agent in encounter.agents:
            model.busy.remove(agent.index)
        return super().resolve(model, encounter, answers)


@pytest.mark.parametrize(
    "settings",
    [
        {"pairing": "rounds"},
        {"pairing": "rounds", "topology": "ring", "topology_degree": 4},
        {"pairing": "continuous", "max_in_flight": 8},
        {"pairing": "continuous", "max_in_flight": 40},
        {"pairing": "network", "topology": "small-world", "max_in_flight": 8},
        {"pairing": "network", "topology": "scale-free", "max_in_flight": 12},
    ],
    ids=lambda settings: "-".join(str(value) for value in settings.values()),
)
def test_no_agent_is_in_two_encounters_at_once(settings: dict[str, Any]) -> None:
    game = WatchedGame(agents=40, pool_size=4, stop_at="none", max_rounds=15, **settings).for_experiment(3)
    model = run_model(game, seed=3, backend=JitteryStandIn(game.standin_rules()))
    assert model.completed == model.time > 0
    assert not model.busy
    assert model.most_open > 4, "the test must run encounters concurrently to mean anything"


def test_continuous_never_exceeds_max_in_flight() -> None:
    game = WatchedGame(agents=60, pool_size=4, stop_at="none", max_rounds=10, max_in_flight=5).for_experiment(1)
    model = run_model(game, seed=1, backend=JitteryStandIn(game.standin_rules()))
    assert model.most_open == 5


def test_rounds_match_every_agent_once_per_round() -> None:
    game = NamingGame(agents=30, pool_size=4, stop_at="none", max_rounds=6, pairing="rounds").for_experiment(2)
    model = run_model(game, seed=2)
    assert model.time == 6 * 15
    assert all(agent.encounters == 6 for agent in model.population)


def test_network_pairs_are_graph_neighbours(tmp_path: Path) -> None:
    edges = tmp_path / "ring.edges"
    edges.write_text("\n".join(f"{i} {(i + 1) % 20}" for i in range(20)))
    game = NamingGame(agents=20, pool_size=4, stop_at="none", max_rounds=8, pairing="network", topology="file",
                      graph_file=str(edges))
    run_experiment(game, tmp_path / "out", seed=4)
    rows = dump(tmp_path / "out" / "agentsim.db", tables=("decisions",))["decisions"]
    by_t: dict[int, set[int]] = {}
    for row in rows:
        by_t.setdefault(row[1], set()).add(row[2])
    assert len(by_t) == 8 * 10
    for pair in by_t.values():
        first, second = sorted(pair)
        assert second - first in (1, 19), pair


def test_rounds_give_the_same_run_whatever_order_answers_arrive(tmp_path: Path) -> None:
    game = NamingGame(agents=30, pool_size=5, stop_at="consensus", max_rounds=40, pairing="rounds")
    run_experiment(game, tmp_path / "a", seed=11, backend=lambda scenario: JitteryStandIn(scenario.standin_rules(), salt=1))
    run_experiment(game, tmp_path / "b", seed=11, backend=lambda scenario: JitteryStandIn(scenario.standin_rules(), salt=2))
    first, second = dump(tmp_path / "a" / "agentsim.db"), dump(tmp_path / "b" / "agentsim.db")
    assert len(first["encounters"]) > 100
    assert first == second


def test_a_different_seed_gives_a_different_run(tmp_path: Path) -> None:
    game = NamingGame(agents=30, pool_size=5, stop_at="none", max_rounds=5, pairing="rounds")
    run_experiment(game, tmp_path / "a", seed=1)
    run_experiment(game, tmp_path / "b", seed=2)
    assert dump(tmp_path / "a" / "agentsim.db")["decisions"] != dump(tmp_path / "b" / "agentsim.db")["decisions"]
