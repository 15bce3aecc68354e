"""The repeated Prisoner's Dilemma with public reputations as one game file on the game layer
(docs/games-layer.md): the rules of the family `agentsim/games/dilemma` (scenarios/prisoners_dilemma.py)
without its nine modules. Every round a fresh random matching; each player sees its partner's
reputation (C in how many of its last five moves) and its own last three rounds, and answers C
or D; payoffs T=5, R=3, P=1, S=0.

Its stand-in is the family's rule (image scoring's discriminator with a tremble, the same dice
from each call's seed), given as the game's stand-in part (agentsim/parts.py), so on the
stand-in this file records the family's moves, move for move (tests/test_onefile_games.py).

    python -m agentsim scenarios/prisoners_dilemma_onefile.py --runs 3 --out results/dilemma_onefile
    python -m agentsim report results/dilemma_onefile
"""

import asyncio
from dataclasses import dataclass

from agentsim.gamekit import Ask, Game, GameParams, KitStandInSettings, Options
from agentsim.params import require
from agentsim.parts import StandInPart
from agentsim.seeding import unit_uniforms

MOVE = Options("C", "D")


@dataclass(frozen=True, kw_only=True)
class DilemmaParams(GameParams):
    agents: int = 16
    max_rounds: int = 20
    group_size: int = 2  # a random matching every round
    history_rounds: int = 3  # the player's own last rounds its prompt shows
    reputation_window: int = 5  # k: the moves a reputation is taken over
    temptation: int = 5
    reward: int = 3
    punishment: int = 1
    sucker: int = 0
    max_tokens: int = 8

    def validate(self) -> None:
        super().validate()
        require(self.temptation > self.reward > self.punishment > self.sucker,
                "a Prisoner's Dilemma needs temptation > reward > punishment > sucker")


@dataclass(frozen=True, kw_only=True)
class ImageScoringSettings(KitStandInSettings):
    threshold: float = 0.5  # cooperate with a partner whose reputation is at least this
    trusting: bool = True  # cooperate with a partner who has no record yet
    noise: float = 0.1  # the chance of playing the other move

    def validate(self) -> None:
        super().validate()
        self.require_rates("threshold", "noise")


class PrisonersDilemmaOneFile(Game[DilemmaParams]):
    name = "prisoners_dilemma_onefile"
    Params = DilemmaParams
    standin: ImageScoringSettings = ImageScoringSettings()
    rules = ("You are {player}, one of {agents} players in a repeated game. Every round you are paired with a randomly "
             "chosen other player; you both choose at the same time C (cooperate) or D (defect). Points per round: both "
             "C: {reward} each; you C, your partner D: you {sucker}, your partner {temptation}; you D, your partner C: "
             "you {temptation}, your partner {sucker}; both D: {punishment} each. Every player's reputation is public: "
             "how many of their last {reputation_window} moves were C. Earn as many points as you can.")
    question = "Round {round}. Your partner's reputation: {reputation}. Which action do you choose?"

    async def play_round(self, round):
        first, second = round.players
        await asyncio.gather(self._ask(round, first, second), self._ask(round, second, first))
        for player, partner in ((first, second), (second, first)):
            mine, theirs = round.choices[player], round.choices[partner]
            round.pay(player, self.payoff(mine, theirs))
            round.tell(player, f"Your partner chose {theirs}.")
            record = (player.private.get("record", "") + mine)[-self.params.reputation_window:]
            round.keep(player, record=record)  # public: its partners read it as its reputation
        round.record(cooperated=sum(choice == "C" for choice in round.choices.values()))

    async def _ask(self, round, player, partner):
        record = partner.private.get("record", "")
        reputation = f"C in {record.count('C')} of their last {len(record)} moves" if record else "no moves yet"
        await round.ask(player, MOVE, reputation=reputation, partner_record=record)

    def payoff(self, mine, theirs):
        params = self.params
        if mine == "C":
            return params.reward if theirs == "C" else params.sucker
        return params.temptation if theirs == "C" else params.punishment

    def standin_part(self):
        return StandInPart(rules=[ImageScoring(self)], ignores=("temptation", "reward", "punishment", "sucker"))


class ImageScoring:
    """The stand-in (Nowak and Sigmund 1998): cooperate with a partner whose reputation is at
    least `threshold` (with a newcomer if `trusting`), play the other move with probability
    `noise`; a first attempt names no move with probability `invalid_rate`."""

    def __init__(self, game):
        self.game = game

    def answer(self, request):
        ask, settings = request.situation, self.game.standin
        if not isinstance(ask, Ask) or ask.game != self.game.name:
            return None
        tremble, invalid = unit_uniforms(request.seed or 0, 2)
        if len(request.messages) == 2 and invalid < settings.invalid_rate:
            return "Let me think about what my partner will do."
        record = ask.fact("partner_record")
        cooperate = record.count("C") / len(record) >= settings.threshold if record else settings.trusting
        return "C" if cooperate != (tremble < settings.noise) else "D"


RUNS = 2
scenario = PrisonersDilemmaOneFile()
