"""The Diner's Dilemma, as GAMA-Bench plays it (Huang et al. 2024, arXiv:2403.11807): 10
diners each order a cheap dish (costs 10, worth 15) or a costly one (costs 20, worth 20) for
20 rounds, and split the bill equally. Ordering the costly dish is the dominant strategy:
GAMA-Bench's score (as revised in April 2024) is the share of costly orders.

    python -m agentsim scenarios/gamabench/diner_dilemma.py --out results/diner
    python -m agentsim score results/diner
"""

from dataclasses import dataclass

from agentsim.gamekit import Options
from agentsim.games.gamabench.base import GamaGame, GamaParams
from agentsim.games.gamabench.rules import diner_round, payoffs

FORMAT = 'Reply with this JSON object and nothing else: {"chosen_dish": "cheap" or "costly"}'


@dataclass(frozen=True, kw_only=True)
class DinerParams(GamaParams):
    cheap_cost: int = 10
    cheap_utility: int = 15
    exp_cost: int = 20
    exp_utility: int = 20


class DinerDilemma(GamaGame[DinerParams]):
    name = "gamabench_diner_dilemma"
    game = "diner_dilemma"
    Params = DinerParams
    question = "Round {round}: do you order the cheap dish or the costly one?"

    @property
    def rules(self):
        p = self.params
        return self.gama_text("description", p.agents, p.max_rounds, p.exp_cost, p.exp_utility, p.cheap_cost,
                              p.cheap_utility, "") or (
            "You are {player}, one of {agents} people dining together, {rounds} times. Each time every diner orders "
            "either the cheap dish (it costs {cheap_cost} and is worth {cheap_utility} to you) or the costly dish "
            "(it costs {exp_cost} and is worth {exp_utility} to you). The bill is split equally: what you get is "
            "your dish's worth minus your share of the bill.")

    async def play_round(self, round):
        if self.params.exact:  # as GAMA-Bench's runner plays it (agentsim/games/gamabench/exact.py)
            return await self.play_exact(round)
        asked = self.gama_text("request", round.number, FORMAT)
        await round.ask_each(round.players, Options("cheap", "costly"), asked)
        self.outcome(round)

    def outcome(self, round):
        params = self.gama()
        record = diner_round([round.choices[player] for player in round.players], params)
        costly = self.params.agents - record["cheap_player"]
        for player, paid in zip(round.players, payoffs("diner_dilemma", record, params)):
            round.pay(player, paid)
            worth = paid + record["avg_cost"]
            round.tell(player, self.gama_text("report", round.number, costly, record["cheap_player"], record["cost_msg"],
                                              record["avg_cost"], round.choices[player],
                                              f"{worth:g} - {record['total_cost']}/{self.params.agents} = {paid:.2f}",
                                              template=False)
                       or f"{costly} ordered the costly dish and {record['cheap_player']} the "
                          f"cheap one; the bill was {record['cost_msg']}, {record['avg_cost']:.2f} each.")
        round.record(**record)

    def standin_choice(self, ask, rng):
        """Costly with probability 1/2 (no reason to prefer either before seeing the others)."""
        return rng.choice(("cheap", "costly"))


RUNS = 1
scenario = DinerDilemma()
