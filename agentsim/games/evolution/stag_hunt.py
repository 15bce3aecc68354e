"""The iterated Stag Hunt over generations (Liu 2025, the Llama-3.1 case study).

Each game pairs the population at random (from the run's generator) and each pair plays
`rounds` rounds; both hunters choose at once and see every earlier choice of their pair in
this game. A hunter's game payoff is its total over the rounds; its score, the mean over the
generation's games. An answer that cannot be read after the re-asks is a recorded fallback,
scored (and shown to the partner) as a hare, the safe choice, and left out of the
cooperation rate.
"""

from __future__ import annotations

import asyncio
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from ...codec import Parsed
from ...llm.base import Grammar
from ...records import Decision, EncounterRecord, Move
from . import prompts
from .codec import EvolutionCodec
from .game import CulturalEvolution
from .params import StagHuntParams
from .parsers import parse_hunt
from .population import EvolutionAgent, Phase
from .prompts import Situation, StagView

if TYPE_CHECKING:
    from ...model import PopulationModel
    from ...scheduler import Encounter


class StagHunt(CulturalEvolution[StagHuntParams]):
    name: ClassVar[str] = "stag_hunt"
    Params = StagHuntParams
    game_label: ClassVar[str] = "Stag Hunt"

    @cached_property
    def codec(self) -> StagCodec:
        return StagCodec(self.params)

    def payoffs(self, mine: str, theirs: str) -> float:
        params = self.params
        if mine == "STAG":
            return params.stag_stag if theirs == "STAG" else params.stag_alone
        return params.hare_against_stag if theirs == "STAG" else params.hare

    # --- a game ---------------------------------------------------------------------------
    def game_order(self, model: PopulationModel, game: int, previous: list[int]) -> list[int]:
        order = list(range(self.params.agents))
        model.random.shuffle(order)
        return order

    def round_groups(self, order: list[int], phase: Phase) -> list[tuple[int, ...]]:
        return [(order[i], order[i + 1]) for i in range(0, len(order), 2)]

    def reset_game(self, agent: EvolutionAgent) -> None:
        agent.payoff = 0.0
        agent.history = []

    def game_view(self, model: PopulationModel, encounter: Encounter, phase: Phase) -> tuple[StagView, StagView]:
        first, second = encounter.agents
        assert isinstance(first, EvolutionAgent) and isinstance(second, EvolutionAgent)
        return (self._view(first, second, phase), self._view(second, first, phase))

    @staticmethod
    def _view(agent: EvolutionAgent, partner: EvolutionAgent, phase: Phase) -> StagView:
        history = "\n".join(agent.history) or f"This is the first round: you have not seen {partner.name} hunt yet."
        return StagView(agent.name, phase.generation, phase.game + 1, phase.round + 1, agent.strategy, agent.norms,
                        partner.name, history)

    async def play_round(self, model: PopulationModel, encounter: Encounter) -> tuple[Decision, Decision]:
        first, second = encounter.agents
        views = encounter.views
        answers = await asyncio.gather(first.astep(views[0]), second.astep(views[1]))
        return answers[0], answers[1]

    def resolve_round(self, model: PopulationModel, encounter: Encounter, answers: Any, phase: Phase) -> EncounterRecord:
        decisions: tuple[Decision, Decision] = answers
        agents = encounter.agents
        played = [decision.action or "HARE" for decision in decisions]  # a fallback hunts a hare
        moves = []
        for me, (agent, decision) in enumerate(zip(agents, decisions)):
            assert isinstance(agent, EvolutionAgent)
            mine, theirs = played[me], played[1 - me]
            payoff = self.payoffs(mine, theirs)
            agent.payoff += payoff
            agent.history.append(f"In round {phase.round + 1}, you hunted a {mine} and {agents[1 - me].name} "
                                 f"hunted a {theirs}.")
            model.metrics.hunt(decision.action, decision.fallback)
            moves.append(Move(agent.index, decision.action, payoff))
        return EncounterRecord(encounter.t, encounter.round, int(played == ["STAG", "STAG"]), moves,
                               decisions[0].calls + decisions[1].calls)


class StagCodec(EvolutionCodec):
    """The Stag Hunt's words: its system prompt and norms sentence, the strategy brief with the
    payoffs, a hunter's turn, its reading and its reminder."""

    norms_in_system: ClassVar[str] = prompts.STAG_NORMS_IN_SYSTEM
    params: StagHuntParams

    def __init__(self, params: StagHuntParams) -> None:
        self.params = params

    def system_prompt(self, norms: str) -> str:
        return prompts.STAG_SYSTEM.format(norms_block=self.norms_block(norms))

    def strategy_brief(self) -> str:
        return prompts.STAG_BRIEF.format(payoffs=self._payoffs())

    def _payoffs(self) -> str:
        params = self.params
        return prompts.STAG_PAYOFFS.format(stag_stag=params.stag_stag, stag_alone=params.stag_alone,
                                           hare_against_stag=params.hare_against_stag, hare=params.hare,
                                           rounds=params.rounds)

    def turn_prompt(self, view: Situation) -> str:
        assert isinstance(view, StagView)
        return prompts.STAG_TURN.format(name=view.name, strategy=view.strategy, generation=view.generation,
                                        round=view.round, partner=view.partner, history=view.history, payoffs=self._payoffs(),
                                        probabilities=prompts.PROBABILITIES)

    def turn_grammar(self, view: Situation) -> Grammar:
        """"Answer: STAG" or "Answer: HARE": a choice grammar, so a backend that scores options
        stores each hunt's exact probability."""
        return Grammar.choice({hunt: f"Answer: {hunt}" for hunt in ("STAG", "HARE")})

    def parse_turn(self, text: str, view: Situation) -> Parsed:
        return parse_hunt(text)

    def remind_turn(self, view: Situation, parsed: Parsed) -> str:
        return prompts.REMIND_STAG.format(problem=parsed.problem)
