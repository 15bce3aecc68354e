"""The rules: a population of LLM agents plays the repeated Prisoner's Dilemma with public
reputations, every round in a fresh random matching (pairs of strangers who know each other
only by reputation: indirect reciprocity, not the two-player iterated game).

Each agent's state is its own memory of `Play`s (its move, its partner's, its payoff); its
reputation is read from that memory by its partner's prompt when they meet, so no agent reads
any state but its own encounter's. The prompt, the reading of replies and the store's encoding
are the codec's (codec.py), which the game gives its LLM policies.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, ClassVar

from ...agents import PopulationAgent, ask_together
from ...figures import LiveFigures
from ...model import PopulationModel
from ...parts import Readout, StandInPart
from ...policies import LLMPolicy
from ...records import Decision, EncounterRecord, Move
from ...scenario import Scenario
from ...scheduler import Encounter, RoundPairing
from .codec import DilemmaCodec
from .metrics import DilemmaFigures, DilemmaMetrics
from .params import COOPERATE, DilemmaParams, DilemmaStandInSettings
from .situation import DilemmaView, Play
from .standin import DilemmaStandIn


class PrisonersDilemma(Scenario[DilemmaParams, DilemmaView, None]):
    name = "prisoners_dilemma"
    Params = DilemmaParams
    standin: DilemmaStandInSettings = DilemmaStandInSettings()
    summary_dtypes: ClassVar[Mapping[str, str]] = {
        "cooperation_rate": "Float64", "final_round_cooperation_rate": "Float64", "mean_payoff": "Float64",
        "cooperation_by_model.*": "Float64", "mean_payoff_by_model.*": "Float64", "fallback_moves": "Int64",
    }

    @cached_property
    def codec(self) -> DilemmaCodec:
        """The prompt, the reading of replies and the store's encoding (codec.py)."""
        return DilemmaCodec(self.params)

    # --- the run ---------------------------------------------------------------------------
    def build_population(self, model: PopulationModel) -> None:
        params = self.params
        for index in range(params.agents):
            policy = LLMPolicy(model.backend_for(index), params.sampling(), self.codec, max_reasks=params.max_reasks)
            PopulationAgent(model, policy, memory_length=params.memory_length())

    def pairing(self, model: PopulationModel) -> RoundPairing:
        return RoundPairing()  # a random matching of the whole population each round

    def start(self, model: PopulationModel, encounter: Encounter) -> tuple[DilemmaView, DilemmaView]:
        """Each player's view: its own last rounds and its partner's last moves."""
        first, second = encounter.agents
        return self._view(encounter, first, second), self._view(encounter, second, first)

    def _view(self, encounter: Encounter, player: PopulationAgent, partner: PopulationAgent) -> DilemmaView:
        params = self.params
        own: list[Play] = list(player.memory)
        record = [play.own for play in partner.memory][-params.reputation_window:]
        history = own[-params.history_length:] if params.history_length else []
        return DilemmaView(encounter.round + 1, tuple(history), tuple(record))

    async def play(self, model: PopulationModel, encounter: Encounter) -> tuple[Decision, Decision]:
        first, second = await ask_together(encounter.agents, encounter.views)
        return first, second

    def resolve(self, model: PopulationModel, encounter: Encounter, decisions: tuple[Decision, Decision]) -> EncounterRecord:
        (first, second), (first_decision, second_decision) = encounter.agents, decisions
        first_move, second_move = _move(first_decision), _move(second_decision)
        first_payoff = self.params.payoff(first_move, second_move)
        second_payoff = self.params.payoff(second_move, first_move)
        first.memory.append(Play(first_move, second_move, first_payoff))
        second.memory.append(Play(second_move, first_move, second_payoff))
        return EncounterRecord(
            encounter.t, encounter.round, int(first_move == COOPERATE) + int(second_move == COOPERATE),
            [Move(first.index, first_move, first_payoff, first_decision.fell_back),
             Move(second.index, second_move, second_payoff, second_decision.fell_back)],
            first_decision.calls + second_decision.calls,
        )

    def new_metrics(self, model: PopulationModel) -> DilemmaMetrics:
        return DilemmaMetrics(models={agent.index: agent.policy.label for agent in model.agents})

    def readout(self) -> DilemmaReadout:
        return DilemmaReadout()

    # --- the stand-in ----------------------------------------------------------------------
    def standin_part(self) -> StandInPart:
        return StandInPart(rules=[DilemmaStandIn(self.standin)],
                           ignores=("temptation", "reward", "punishment", "sucker", "temperature", "max_tokens",
                                    "history_length"))


class DilemmaReadout(Readout[None]):
    """What a dilemma run shows: its cooperation and payoffs, overall and per model."""

    def run_summary(self, model: PopulationModel[None]) -> dict[str, Any]:
        metrics: DilemmaMetrics = model.metrics
        rates = metrics.cooperation_history
        return {
            "cooperation_rate": metrics.total.cooperation_rate,
            "final_round_cooperation_rate": rates[-1] if rates else None,
            "mean_payoff": metrics.total.mean_payoff,
            "cooperation_by_model": {label: tally.cooperation_rate for label, tally in sorted(metrics.by_model.items())},
            "mean_payoff_by_model": {label: tally.mean_payoff for label, tally in sorted(metrics.by_model.items())},
            "fallback_moves": metrics.total.fallbacks,
        }

    def live_figures(self, model: PopulationModel[None]) -> LiveFigures:
        return DilemmaFigures.of(model.metrics).as_live()


def _move(decision: Decision) -> str:
    """A decision's move: a reply's, or the codec's recorded fallback (which always names one)."""
    if decision.action is None:
        raise RuntimeError("a dilemma decision without a move: the fallback always names C or D")
    return decision.action
