"""The repeated Prisoner's Dilemma with public reputations, on the game layer (agentsim.gamekit):
indirect reciprocity in the image-scoring set-up (Nowak and Sigmund 1998) with the prompts of
the LLM iterated-dilemma studies (Akata et al. 2023; Fontana et al. 2024). Every round a fresh
random matching (`group_size=2`); each player sees its partner's public reputation (C in how
many of its last k moves), read from the moves every player keeps (`Round.keep`), and its own
last rounds, and answers C or D; payoffs T > R > P > S (5/3/1/0). Its score is the run's
cooperation rate (the share of C among the choices; fallbacks left out).

The stand-in is image scoring's discriminator: cooperate with a partner whose reputation is at
least `threshold` (with a newcomer when `trusting`), then play the other move with probability
`noise`; its dice come from each call's seed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...gamekit import Ask, Game, GameParams, KitStandInSettings, Options, Player, Round
from ...params import require

COOPERATE, DEFECT = "C", "D"
MOVE = Options(COOPERATE, DEFECT)


@dataclass(frozen=True, kw_only=True)
class DilemmaParams(GameParams):
    agents: int = 16
    max_rounds: int = 20
    group_size: int = 2  # a fresh random matching every round
    history_rounds: int = 3  # the player's own last rounds its prompt shows
    reputation_window: int = 5  # k: the moves a reputation is taken over
    temptation: int = 5
    reward: int = 3
    punishment: int = 1
    sucker: int = 0
    max_tokens: int = 8

    def validate(self) -> None:
        super().validate()
        require(self.group_size == 2, f"the dilemma is played in pairs: group_size must be 2 (got {self.group_size})")
        require(self.reputation_window >= 1, f"reputation_window must be >= 1 (got {self.reputation_window})")
        require(self.temptation > self.reward > self.punishment > self.sucker,
                f"a Prisoner's Dilemma needs temptation > reward > punishment > sucker (got {self.temptation}, "
                f"{self.reward}, {self.punishment}, {self.sucker})")
        require(2 * self.reward > self.temptation + self.sucker,
                f"mutual cooperation must pay more than taking turns to exploit: 2*reward > temptation + sucker "
                f"(got 2*{self.reward} <= {self.temptation} + {self.sucker})")


@dataclass(frozen=True, kw_only=True)
class DilemmaStandInSettings(KitStandInSettings):
    """The stand-in's rule; `--set standin.noise=0.2`."""

    threshold: float = 0.5  # cooperate with a partner whose reputation is at least this
    trusting: bool = True  # cooperate with a partner who has no record yet
    noise: float = 0.1  # the chance of playing the other move (a tremble)

    def validate(self) -> None:
        super().validate()
        self.require_rates("threshold", "noise")


class PrisonersDilemma(Game[DilemmaParams]):
    name = "prisoners_dilemma"
    Params = DilemmaParams
    standin: DilemmaStandInSettings = DilemmaStandInSettings()
    rules = ("You are a player in a repeated game with {agents} players. Every round you are paired with a randomly "
             "chosen other player. You and your partner each choose, at the same time and without seeing the other's "
             "choice, one of two actions: C (cooperate) or D (defect).\n\nPoints per round:\n"
             "- both choose C: you get {reward}, your partner gets {reward}\n"
             "- you choose C, your partner D: you get {sucker}, your partner gets {temptation}\n"
             "- you choose D, your partner C: you get {temptation}, your partner gets {sucker}\n"
             "- both choose D: you get {punishment}, your partner gets {punishment}\n\n"
             "Every player's reputation is public: how many of their last {reputation_window} moves were C. Other "
             "players see yours the same way. Your goal is to earn as many points as possible over all rounds.")
    question = "Round {round}. Your partner's reputation: {reputation}. Which action do you choose, C or D?"

    async def play_round(self, round: Round) -> None:
        first, second = round.players
        await asyncio.gather(self.ask(round, first, second), self.ask(round, second, first))
        for player, partner in ((first, second), (second, first)):
            mine, theirs = round.choices[player], round.choices[partner]
            round.pay(player, self.payoff(mine, theirs))
            round.tell(player, f"Your partner chose {theirs}.")
            record = (player.private.get("record", "") + mine)[-self.params.reputation_window:]
            round.keep(player, record=record)  # public: its partners read it as its reputation
        chosen = list(round.choices.values())
        round.record(cooperated=chosen.count(COOPERATE), mutual=chosen == [COOPERATE, COOPERATE])

    async def ask(self, round: Round, player: Player, partner: Player) -> None:
        record = partner.private.get("record", "")
        reputation = (f"C in {record.count(COOPERATE)} of their last {len(record)} moves" if record else
                      "no moves yet (this is their first round)")
        await round.ask(player, MOVE, reputation=reputation, partner_record=record)

    def payoff(self, mine: str, theirs: str) -> int:
        params = self.params
        if mine == COOPERATE:
            return params.reward if theirs == COOPERATE else params.sucker
        return params.temptation if theirs == COOPERATE else params.punishment

    def standin_choice(self, ask: Ask, rng: random.Random) -> str:
        """Image scoring's discriminator with a tremble (the settings above)."""
        settings, record = self.standin, ask.fact("partner_record")
        cooperate = record.count(COOPERATE) / len(record) >= settings.threshold if record else settings.trusting
        return COOPERATE if cooperate != (rng.random() < settings.noise) else DEFECT

    def score(self, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        """The run's cooperation rate: the share of C among its choices (fallbacks left out)."""
        chosen = [move[3] for line in rounds for group in line["groups"] for move in group["moves"] if not move[4]]
        return chosen.count(COOPERATE) / len(chosen) if chosen else None
