"""The population over generations: agents as slots that individuals occupy, the phases of a
generation in scheduler rounds, and selection.

An agent (a Mesa agent, a slot) keeps its index for the whole run; a generation's newcomers
take the slots of the agents that did not survive, so the scheduler's population never
changes and every record names a slot (`agent`) and the individual in it (its `name`, e.g.
"3_2": the second newcomer of generation 3, as Vallinder and Hughes name them)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ...agents import PopulationAgent
from ...scheduler import RoundPairing
from .params import EvolutionParams

if TYPE_CHECKING:
    from ...model import PopulationModel
    from ...policies import Policy
    from .game import CulturalEvolution


class EvolutionAgent(PopulationAgent):
    """A slot and the individual in it: its strategy and norms (texts), what it inherited,
    and its standing in the current game (`payoff`: a donor's resources, a hunter's total;
    `trace`: its reputation chain in the Donor game; `history`: its pair's choices in the
    Stag Hunt) and generation (`scores`: its final payoff in each game)."""

    def __init__(self, model: PopulationModel, policy: Policy) -> None:
        super().__init__(model, policy, memory_length=0)
        self.name = ""
        self.born = 1
        self.parent: int | None = None  # the survivor (slot) whose norms (and strategy, with "mutate") it received
        self.parent_name = ""
        self.sources: list[str] = []  # whose strategies its own came from (the advice's authors, or its parent)
        self.strategy = ""
        self.norms = ""
        self.payoff = 0.0
        self.trace: list[str] = []
        self.history: list[str] = []
        self.scores: list[float] = []

    _FIELDS = ("name", "born", "parent", "parent_name", "sources", "strategy", "norms", "payoff", "trace", "history", "scores")

    def state(self) -> dict[str, Any]:
        return super().state() | {field: _copy(getattr(self, field)) for field in self._FIELDS}

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        for field in self._FIELDS:
            setattr(self, field, _copy(state[field]))

    @property
    def score(self) -> float:
        """Its mean final payoff over the generation's games (the paper's "average final payoff")."""
        return round(sum(self.scores) / len(self.scores), 9) if self.scores else 0.0


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


class Phase(NamedTuple):
    """What one scheduler round does: a text task of some agents, or a round of a game."""

    generation: int
    kind: str  # a Task kind, or "play"
    game: int = 0  # 0-based
    round: int = 0  # 0-based, within the game


def phases(params: EvolutionParams) -> tuple[Phase, ...]:
    """Every scheduler round of a run, in order (Liu's Algorithm 1)."""
    inherit = "inherit" if params.strategy_inheritance == "advice" else "mutate_strategy"
    schedule: list[Phase] = []
    for generation in range(1, params.generations + 1):
        if generation == 1:
            texts = ["strategy"] + (["elicit"] if params.norms else [])
        else:
            texts = [inherit] + (["revise", "mutate"] if params.norms else [])
        schedule += [Phase(generation, kind) for kind in texts]
        schedule += [Phase(generation, "play", game, round_) for game in range(params.games) for round_ in range(params.rounds)]
    return tuple(schedule)


@dataclass
class RunState:
    """What a run keeps outside its agents: the current game's order of the population (its
    pairs follow from it), and the advice the survivors left (name, score, strategy, in rank
    order)."""

    order: list[int]
    advice: list[tuple[str, float, str]]


class GenerationPairing(RoundPairing):
    """The groups of the round the schedule says: each agent alone for a text task (the
    agents the task is for), the game's pairs for a game round."""

    def __init__(self, game: CulturalEvolution[Any]) -> None:
        super().__init__()
        self.game = game

    def groups(self, model: PopulationModel, count: int) -> list[tuple[int, ...]]:
        return self.game.groups(model, self.game.phase(model.rounds_done))


def ranking(scores: list[float], rng: random.Random) -> list[int]:
    """Positions ordered best first, ties broken by one shuffle from the run's generator (drawn
    whether or not there are ties, so the draws do not depend on the scores)."""
    tiebreak = list(range(len(scores)))
    rng.shuffle(tiebreak)
    return sorted(range(len(scores)), key=lambda position: (-scores[position], tiebreak[position]))


def select(scores: list[float], survivors: int, rule: str, rng: random.Random) -> list[int]:
    """The surviving positions, best first: the top `survivors` ("top"), or a uniform draw
    ("random", Vallinder and Hughes's control)."""
    if rule == "random":
        order = list(range(len(scores)))
        rng.shuffle(order)
        return order[:survivors]
    return ranking(scores, rng)[:survivors]
