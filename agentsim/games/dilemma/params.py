"""The repeated Prisoner's Dilemma's parameters, and the stand-in's settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...llm.base import Sampling
from ...params import Params, StandInSettings, require

COOPERATE, DEFECT = "C", "D"
ACTIONS = (COOPERATE, DEFECT)


@dataclass(frozen=True, kw_only=True)
class DilemmaParams(Params):
    """A population of `agents` meets in random pairs every round for `max_rounds` rounds;
    each player sees its partner's public reputation (the share of C among the partner's last
    `reputation_window` moves) and its own last `history_length` rounds, and plays C or D."""

    agents: int = 16
    max_rounds: int = 20
    reputation_window: int = 5  # k: the moves a reputation is taken over
    history_length: int = 3  # the player's own last rounds its prompt shows
    # payoffs to the row player: T (temptation), R (reward), P (punishment), S (sucker)
    temptation: int = 5
    reward: int = 3
    punishment: int = 1
    sucker: int = 0
    # prompting and sampling
    temperature: float = 0.7
    max_tokens: int = 8
    max_reasks: int = 2  # re-asks with a reminder after an unusable reply
    fallback: Literal["random", "defect", "cooperate"] = "random"  # then this, recorded as a fallback

    def validate(self) -> None:
        require(self.agents >= 2, f"agents must be at least 2 (got {self.agents})")
        require(self.max_rounds >= 1, f"max_rounds must be >= 1 (got {self.max_rounds})")
        require(self.reputation_window >= 1, f"reputation_window must be >= 1 (got {self.reputation_window})")
        require(self.history_length >= 0, f"history_length must be >= 0 (got {self.history_length})")
        require(self.temptation > self.reward > self.punishment > self.sucker,
                f"a Prisoner's Dilemma needs temptation > reward > punishment > sucker (got {self.temptation}, "
                f"{self.reward}, {self.punishment}, {self.sucker})")
        require(2 * self.reward > self.temptation + self.sucker,
                f"mutual cooperation must pay more than taking turns to exploit: 2*reward > temptation + sucker "
                f"(got 2*{self.reward} <= {self.temptation} + {self.sucker})")
        require(self.max_tokens >= 1, f"max_tokens must be >= 1 (got {self.max_tokens})")
        require(0 <= self.max_reasks <= 100, f"max_reasks must be between 0 and 100 (got {self.max_reasks})")
        self.sampling()

    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, max_tokens=self.max_tokens)

    def payoff(self, own: str, partner: str) -> int:
        """The row player's payoff for `own` against `partner`."""
        if own == COOPERATE:
            return self.reward if partner == COOPERATE else self.sucker
        return self.temptation if partner == COOPERATE else self.punishment

    def memory_length(self) -> int:
        """What an agent keeps of its own rounds: enough for its prompt and for its reputation."""
        return max(self.reputation_window, self.history_length)


@dataclass(frozen=True, kw_only=True)
class DilemmaStandInSettings(StandInSettings):
    """The stand-in's rule (agentsim/games/dilemma/standin.py); `--set standin.noise=0.2`."""

    threshold: float = 0.5  # cooperate with a partner whose reputation is at least this
    trusting: bool = True  # cooperate with a partner who has no record yet
    noise: float = 0.1  # the chance of playing the other move (a tremble)
    invalid_rate: float = 0.05  # a first attempt with no move in it (exercises the re-ask)

    def validate(self) -> None:
        self.require_rates("threshold", "noise")
        require(0 <= self.invalid_rate < 1, f"standin.invalid_rate must be in [0, 1) (got {self.invalid_rate})")
