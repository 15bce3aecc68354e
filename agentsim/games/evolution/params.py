"""Parameters of the cultural-evolution games (Liu 2025, after Vallinder and Hughes 2024)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...llm.base import Sampling
from ...params import Params, require

# The paper's conditions: strategies evolve alone, or strategies and cultural norms together,
# with the first generation's norms sampled freely, toward cooperation (Pos) or toward
# exploitation (Neg).
Condition = Literal["strategies", "norms", "norms_pos", "norms_neg"]
CONDITIONS: tuple[Condition, ...] = ("strategies", "norms", "norms_pos", "norms_neg")
CONDITION_LABELS = {"strategies": "Strategies", "norms": "Strategies + norms",
                    "norms_pos": "Strategies + norms (Pos)", "norms_neg": "Strategies + norms (Neg)"}


@dataclass(frozen=True, kw_only=True)
class EvolutionParams(Params):
    """What both games share.

    A generation: (generation 1) every agent samples a strategy, then, with norms, its cultural
    norms; (later generations) the newcomers receive strategies from the survivors, survivors
    revise their norms from their strategies, newcomers mutate a survivor's revised norms;
    then `games` games of `rounds` rounds; each agent's score is its mean final payoff over
    the games; the top `survival_share` survive (ties broken by the run's seed).

    `strategy_inheritance`: "advice" is Vallinder and Hughes's prompt (each newcomer sees
    every survivor's strategy and score and modifies that advice); "mutate" gives newcomer k
    survivor k's strategy alone, with a mutation prompt worded like the paper's culture
    mutation prompt. Newcomer k's norms always mutate survivor k's revised norms.
    `advice_with_scores`: the advice lists each survivor as "name (final score X): strategy",
    as the prompt's words promise; off (the default), it is the list of the survivors'
    strategies alone, as Vallinder and Hughes's notebook passes it (`str(list)`).
    `max_rounds` (0: all) stops after that many scheduler rounds, for quick looks."""

    condition: Condition = "strategies"
    agents: int = 4
    generations: int = 12
    rounds: int = 4
    games: int = 1
    survival_share: float = 0.5
    selection: Literal["top", "random"] = "top"
    strategy_inheritance: Literal["advice", "mutate"] = "advice"
    advice_with_scores: bool = False
    max_reasks: int = 9  # Vallinder and Hughes: up to 10 attempts
    # send a turn's answer format as a grammar (a donation, a hunt), where the backend constrains
    # decoding (llama.cpp, TGI, vLLM); the texts (strategies, norms) stay free
    constrained_decoding: bool = False
    # with constrained_decoding, a strategy or norm set begins with its marker ("My strategy will be ...") and runs
    # to the line's end (agentsim's setting: a small model seldom writes the marker of itself)
    constrained_texts: bool = False
    temperature: float = 1.0
    top_p: float | None = None
    max_tokens: int = 800
    max_rounds: int = 0

    def validate(self) -> None:
        require(self.agents >= 2 and self.agents % 2 == 0, f"agents must be an even number >= 2 (got {self.agents})")
        require(self.generations >= 1, f"generations must be >= 1 (got {self.generations})")
        require(self.rounds >= 1, f"rounds must be >= 1 (got {self.rounds})")
        require(self.games >= 1, f"games must be >= 1 (got {self.games})")
        require(0 < self.survival_share < 1, f"survival_share must be in (0, 1) (got {self.survival_share})")
        require(1 <= self.survivors() < self.agents,
                f"survival_share {self.survival_share} of {self.agents} agents leaves no survivor or no newcomer")
        require(self.max_reasks >= 0, f"max_reasks must be >= 0 (got {self.max_reasks})")
        require(self.max_tokens >= 1, f"max_tokens must be >= 1 (got {self.max_tokens})")
        require(self.max_rounds >= 0, f"max_rounds must be >= 0 (got {self.max_rounds})")
        self.sampling()  # temperature and max_tokens within what a provider takes

    @property
    def norms(self) -> bool:
        return self.condition != "strategies"

    def survivors(self) -> int:
        return round(self.agents * self.survival_share)

    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)


@dataclass(frozen=True, kw_only=True)
class DonorParams(EvolutionParams):
    """The Donor game: each player starts every game with `endowment`; a donor gives up some
    of what it has and the recipient receives `cooperation_gain` times that; roles alternate
    every round; a donor sees the recipient's reputation chain, the last `trace_length`
    actions (the recipient's, its partner's before that, ...). `punishment`: "costly" lets a
    donor spend x to take `punishment_loss` x from the recipient; "partner_choice" lets it
    refuse to play. Vallinder and Hughes play two games per generation, the second with the
    roles reversed. `chain_prefix` opens the chain with "Here is what R and their earlier
    partners did in previous rounds:"; off (the default), the chain stands alone, as in the
    branch of the notebook's donor prompt that runs (traces kept as lists). `donation_reader`:
    "notebook" reads answers as the notebook does (an amount above what the donor holds is an
    invalid action that moves nothing); "agentsim" also reads "**3**", "$4" and "1,000",
    refuses negative amounts and re-asks an amount above what the donor holds.
    `bounded_donations` (with `constrained_decoding`): the answer's grammar allows no amount
    above what the donor holds, agentsim's setting (the notebook constrains nothing)."""

    endowment: float = 10.0
    cooperation_gain: float = 2.0
    punishment: Literal["none", "costly", "partner_choice"] = "none"
    punishment_loss: float = 2.0
    trace_length: int = 3
    chain_prefix: bool = False
    donation_reader: Literal["notebook", "agentsim"] = "notebook"
    # with constrained_decoding, the grammar holds an amount to what the donor holds (agentsim's setting:
    # the notebook constrains nothing, and a small model asked freely writes amounts up to 9999.99)
    bounded_donations: bool = False
    games: int = 2

    def validate(self) -> None:
        super().validate()
        require(self.endowment > 0, f"endowment must be > 0 (got {self.endowment})")
        require(self.cooperation_gain > 0, f"cooperation_gain must be > 0 (got {self.cooperation_gain})")
        require(self.trace_length >= 1, f"trace_length must be >= 1 (got {self.trace_length})")


@dataclass(frozen=True, kw_only=True)
class StagHuntParams(EvolutionParams):
    """The iterated Stag Hunt: pairs drawn at random for each game play `rounds` rounds
    together, each seeing every earlier choice of the pair. The paper gives only the maximum
    (80 over 8 rounds: 10 a round for two stags); the rest are ours and are parameters:
    a lone stag hunter gets nothing, a hare always gives its hunter 5."""

    stag_stag: float = 10.0
    stag_alone: float = 0.0
    hare: float = 5.0
    hare_against_stag: float = 5.0
    rounds: int = 8

    def validate(self) -> None:
        super().validate()
        require(self.stag_stag > max(self.hare, self.hare_against_stag) > self.stag_alone,
                "a Stag Hunt needs stag_stag > hare payoffs > stag_alone")
