"""`max_in_flight=1` is the papers' process: one random pair per time step. A plain sequential
implementation, written without any of the engine (no prompts, no parsing, no scheduler),
must give the same interactions, one for one."""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path

import pytest
from helpers import JitteryStandIn, dump, run_experiment

from agentsim.games.naming import NamingGame, NamingStandIn, NamingStandInSettings
from agentsim.seeding import derive_seed, unit_uniforms


def sequential_reference(*, seed: int, agents: int, names: tuple[str, ...], memory_length: int, interactions: int,
                         bias_name: str | None, bias: float, noise: float) -> list[tuple[int, int, str, int, str]]:
    """The naming game as a loop: draw a pair uniformly, show each a shuffled option list, let
    the stand-in's rule choose from its memory, pay +100 / -50, remember."""
    rng = random.Random(seed)
    rule = NamingStandIn([], NamingStandInSettings(bias_name=bias_name, bias=bias, noise=noise))
    memories = [deque(maxlen=memory_length) for _ in range(agents)]
    encounters = [0] * agents
    history = []
    for _ in range(interactions):
        first = rng.randrange(agents)
        second = rng.randrange(agents - 1)
        second += second >= first
        chosen = {}
        for agent, options in ((first, tuple(rng.sample(names, len(names)))), (second, tuple(rng.sample(names, len(names))))):
            call_seed = derive_seed(derive_seed(seed, agent), encounters[agent], 0)
            noise_die = unit_uniforms(call_seed, 3)[1] if noise else 1.0
            chosen[agent], _ = rule.choose(list(options), [(own, partner) for own, partner, _ in memories[agent]],
                                           noise_die, call_seed)
        payoff = 100 if chosen[first] == chosen[second] else -50
        memories[first].append((chosen[first], chosen[second], payoff))
        memories[second].append((chosen[second], chosen[first], payoff))
        encounters[first] += 1
        encounters[second] += 1
        history.append((first, second, chosen[first], chosen[second]))
    return history


@pytest.mark.parametrize("jittery", [False, True], ids=["in-process", "suspending"])
@pytest.mark.parametrize("bias", [0.0, 0.3])
def test_max_in_flight_one_is_the_sequential_process(tmp_path: Path, jittery: bool, bias: float) -> None:
    names = ("Q", "M", "F", "J")
    interactions = 12 * 40
    game = NamingGame(agents=24, names=names, memory_length=5, pairing="sequential", max_in_flight=1,
                      stop_at="none", max_rounds=40, standin=NamingStandInSettings(bias_name="M", bias=bias, noise=0.05))
    backend = (lambda scenario: JitteryStandIn(scenario.standin_part().rules)) if jittery else None
    run_experiment(game, tmp_path / "run", seed=5, backend=backend)
    rows = dump(tmp_path / "run" / "agentsim.db", tables=("decisions",))["decisions"]
    recorded: dict[int, list[tuple[int, str]]] = {}
    for _, t, agent, _, action, *_ in rows:
        recorded.setdefault(t, []).append((agent, action))

    expected = sequential_reference(seed=5, agents=24, names=names, memory_length=5, interactions=interactions,
                                    bias_name="M", bias=bias, noise=0.05)
    assert len(recorded) == interactions
    for t, (first, second, first_name, second_name) in enumerate(expected):
        assert sorted(recorded[t]) == sorted([(first, first_name), (second, second_name)]), f"interaction {t}"
