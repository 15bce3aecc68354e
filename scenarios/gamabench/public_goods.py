"""The Public Goods Game, as GAMA-Bench plays it (Huang et al. 2024, arXiv:2403.11807): 10
players each get 20 tokens every round for 20 rounds and choose how many to put in a public
pot; the pot is doubled and shared equally, and each keeps what it did not put in. Giving
nothing is the dominant strategy: GAMA-Bench's score (as revised in April 2024) is 100 when no
one contributes.

    python -m agentsim scenarios/gamabench/public_goods.py --out results/goods
    python -m agentsim score results/goods
"""

from dataclasses import dataclass

from agentsim.gamekit import Number
from agentsim.games.gamabench.base import GamaGame, GamaParams
from agentsim.games.gamabench.rules import goods_round, payoffs

FORMAT = 'Reply with this JSON object and nothing else: {"tokens_contributed": a whole number from 0 to 20}'


@dataclass(frozen=True, kw_only=True)
class GoodsParams(GamaParams):
    tokens: int = 20
    ratio: float = 2


class PublicGoods(GamaGame[GoodsParams]):
    name = "gamabench_public_goods"
    game = "public_goods"
    Params = GoodsParams
    question = "Round {round}: you have {tokens} tokens. How many do you put in the public pot?"

    @property
    def rules(self):
        p = self.params
        return self.gama_text("description", p.agents, p.max_rounds, p.ratio, "") or (
            "You are {player}, one of {agents} players of a game of {rounds} rounds. Every round each player gets "
            "{tokens} tokens and privately chooses how many of them to put in a public pot. The pot is multiplied "
            "by {ratio} and shared equally among all players; each also keeps the tokens it did not put in.")

    async def play_round(self, round):
        if self.params.exact:  # as GAMA-Bench's runner plays it (agentsim/games/gamabench/exact.py)
            return await self.play_exact(round)
        asked = self.gama_text("request", round.number, self.params.tokens, FORMAT)
        await round.ask_each(round.players, Number(0, self.params.tokens), asked)
        self.outcome(round)

    def outcome(self, round):
        params = self.gama()
        given = [round.choices[player] for player in round.players]
        record = goods_round(given, params)
        share = record["total_tokens"] * self.params.ratio / self.params.agents
        paid = payoffs("public_goods", record, params)
        for player, gave, got in zip(round.players, given, paid):
            round.pay(player, got)
            round.tell(player, self.gama_text("report", round.number, given, gave, record["total_tokens"],
                                              f"{share - gave:.2f}", f"{got:.2f}", [f"{x:.2f}" for x in paid], template=False)
                       or f"The contributions were {', '.join(map(str, given))}, "
                          f"{record['total_tokens']} tokens in all; each player got {share:.2f} back from the pot.")
        round.record(**record)

    def standin_choice(self, ask, rng):
        """Conditional cooperators' opening: uniform from nothing to half the endowment."""
        return rng.randint(0, self.params.tokens // 2)


RUNS = 1
scenario = PublicGoods()
