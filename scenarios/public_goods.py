"""A repeated public goods game in groups of four redrawn every round (the "strangers" design
of Fehr and Gächter 2000, with LLM players as in the public goods games of GAMA-Bench, Huang
et al. 2024): each player gets 10 tokens a round and contributes 0-10 of them to its group's
project; the project is multiplied by 1.6 and shared equally among the four (a marginal per
capita return of 0.4), so keeping everything pays each player, contributing all pays the group.

    python -m agentsim scenarios/public_goods.py --out results/public_goods
    python -m agentsim scenarios/public_goods.py --population "openai:gpt-4o-mini=8,stand-in=8"
    python -m agentsim report results/public_goods
    python -m agentsim transcript results/public_goods --scenario scenarios/public_goods.py --round 2
"""

from dataclasses import dataclass

from agentsim.gamekit import Game, GameParams, Number


@dataclass(frozen=True, kw_only=True)
class PublicGoodsParams(GameParams):
    agents: int = 16
    group_size: int = 4
    max_rounds: int = 10
    endowment: int = 10
    multiplier: float = 1.6


class PublicGoods(Game[PublicGoodsParams]):
    name = "public_goods"
    Params = PublicGoodsParams
    rules = ("You are {player} in a game of {rounds} rounds with {agents} players. Every round the players are "
             "split at random into groups of {group_size}. Each player gets {endowment} tokens and decides how many "
             "to contribute to the group's project. The project's tokens are multiplied by {multiplier} and shared "
             "equally among the {group_size} members, whatever each contributed; tokens you do not contribute are "
             "yours to keep. Your goal is to end with as many tokens as possible.")
    question = "Round {round} of {rounds}: how many of your {endowment} tokens do you contribute to the project?"

    def choice(self, player):
        return Number(0, self.params.endowment)

    def outcome(self, round):
        total = sum(round.choices.values())
        share = total * self.params.multiplier / len(round.players)
        for player, given in round.choices.items():
            round.pay(player, self.params.endowment - given + share)
        round.tell(None, f"Your group contributed {total} tokens; each member got {share:g} from the project.")
        round.record(total=total, share=share)

    def standin_choice(self, ask, rng):
        """Contributions that start near half the endowment and decay over the rounds, as in
        the laboratory (Ledyard 1995): the mean falls from 1/2 to 1/4 of it, +-2 tokens."""
        fraction = 0.5 - 0.25 * (ask.round - 1) / max(self.params.max_rounds - 1, 1)
        return min(self.params.endowment, max(0, round(fraction * self.params.endowment) + rng.randint(-2, 2)))


RUNS = 2
scenario = PublicGoods()
