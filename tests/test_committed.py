"""Committed minorities: initial consensus, replace or add, count or fraction, and that
committed agents never waver."""

from __future__ import annotations

import pytest
from helpers import run_model

from agentsim.errors import ParameterError
from agentsim.games.naming import NamingGame, NamingStandInSettings
from agentsim.llm.standin import StandInModel
from agentsim.model import BackendShare, PopulationModel


def build(**settings: object) -> PopulationModel:
    game = NamingGame(names=("Q", "M"), memory_length=5, **settings).for_experiment(0)  # type: ignore[arg-type]
    return PopulationModel(game, seed=7, backends=[BackendShare(StandInModel(game.standin_part().rules))])


def test_replace_makes_existing_agents_committed_in_a_population_in_consensus() -> None:
    model = build(agents=24, committed=6, majority_name="M", committed_name="Q")
    committed = [agent for agent in model.population if agent.committed]
    assert len(model.population) == 24 and len(committed) == 6
    assert {agent.policy.label for agent in committed} == {"committed:Q"}
    for agent in model.population:
        if not agent.committed:
            assert list(agent.memory) == [("M", "M", 100)] * 5
    assert model.metrics.committed == frozenset(agent.index for agent in committed)


def test_add_appends_committed_agents_with_empty_memory() -> None:
    model = build(agents=24, committed=4, committed_mode="add", majority_name="M")
    assert len(model.population) == 28
    added = model.population[24:]
    assert all(agent.committed and not agent.memory for agent in added)
    assert all(list(agent.memory) == [("M", "M", 100)] * 5 for agent in model.population[:24])


@pytest.mark.parametrize(("mode", "fraction", "count", "size"), [("replace", 0.25, 6, 24), ("add", 0.2, 6, 30)])
def test_a_fraction_is_a_share_of_the_whole_population(mode: str, fraction: float, count: int, size: int) -> None:
    model = build(agents=24, committed_fraction=fraction, committed_mode=mode)
    assert len(model.population) == size
    assert sum(agent.committed for agent in model.population) == count


def test_the_majority_defaults_to_the_name_the_committed_do_not_play() -> None:
    game = NamingGame(names=("Q", "M"), committed=3, committed_name="Q").for_experiment(0)
    assert game.majority_name() == "M"


def test_committed_agents_always_play_their_name_and_make_no_calls() -> None:
    game = NamingGame(agents=20, names=("Q", "M"), committed=5, majority_name="M", committed_name="Q",
                      stop_at="none", max_rounds=10, standin=NamingStandInSettings(noise=0.3))
    model = run_model(game, seed=2)
    committed = {agent.index for agent in model.population if agent.committed}
    assert model.usage.total().calls == 2 * model.completed - sum(
        agent.encounters for agent in model.population if agent.committed)
    assert all(name == "Q" for agent, name in model.metrics.current.items() if agent in committed)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"agents": 10, "committed": 10}, "leave no uncommitted agent"),
        ({"agents": 10, "committed": 12}, "leave no uncommitted agent"),
        ({"agents": 10, "committed": 2, "committed_fraction": 0.2}, "not both"),
        ({"committed_fraction": 1.0}, "committed_fraction must be in [0, 1)"),
        ({"committed": -1}, "committed must be >= 0"),
        ({"stop_at": "flip"}, "needs a committed minority"),
    ],
)
def test_impossible_minorities_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message.replace("[", r"\[").replace(")", r"\)")):
        NamingGame(names=("Q", "M"), **settings)  # type: ignore[arg-type]


def test_names_the_parameters_refer_to_must_be_in_the_pool() -> None:
    with pytest.raises(ParameterError, match="committed_name 'Z' is not in the name pool"):
        NamingGame(names=("Q", "M"), committed=2, committed_name="Z").for_experiment(0)
