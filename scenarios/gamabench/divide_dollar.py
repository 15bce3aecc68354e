"""Divide the Dollar, as GAMA-Bench plays it (Huang et al. 2024, arXiv:2403.11807): 10
players each ask for a share of 100 golds for 20 rounds; if the asks add up to at most 100,
each gets what it asked, else nobody gets anything. GAMA-Bench's score: 100 when the asks
always add up to exactly the budget.

    python -m agentsim scenarios/gamabench/divide_dollar.py --out results/dollar
    python -m agentsim score results/dollar
"""

from dataclasses import dataclass

from agentsim.gamekit import Number
from agentsim.games.gamabench.base import GamaGame, GamaParams
from agentsim.games.gamabench.rules import dollar_round, payoffs

FORMAT = 'Reply with this JSON object and nothing else: {"bid_amount": a whole number from 0 to 100}'


@dataclass(frozen=True, kw_only=True)
class DollarParams(GamaParams):
    golds: int = 100


class DivideDollar(GamaGame[DollarParams]):
    name = "gamabench_divide_dollar"
    game = "divide_dollar"
    Params = DollarParams
    question = "Round {round}: how many of the {golds} golds do you ask for?"

    @property
    def rules(self):
        p = self.params
        return self.gama_text("description", p.agents, p.max_rounds, p.golds, "") or (
            "You are {player}, one of {agents} players sharing {golds} golds, for {rounds} rounds. Every round each "
            "player asks for a whole number of golds. If the asks add up to at most {golds}, every player gets what "
            "it asked for; if they add up to more, no one gets anything that round.")

    async def play_round(self, round):
        if self.params.exact:  # as GAMA-Bench's runner plays it (agentsim/games/gamabench/exact.py)
            return await self.play_exact(round)
        asked = self.gama_text("request", round.number, self.params.golds, FORMAT)
        await round.ask_each(round.players, Number(0, self.params.golds), asked)
        self.outcome(round)

    def outcome(self, round):
        params = self.gama()
        record = dollar_round([round.choices[player] for player in round.players], params)
        fits = "did not exceed" if record["total_proposal"] <= self.params.golds else "exceeded"
        for player, paid in zip(round.players, payoffs("divide_dollar", record, params)):
            round.pay(player, paid)
            round.tell(player, self.gama_text("report", round.number, round.choices[player], record["total_proposal"],
                                              fits, self.params.golds, paid, template=False)
                       or f"The asks added up to {record['total_proposal']}, which {fits} "
                          f"{self.params.golds}.")
        round.record(**record)

    def standin_choice(self, ask, rng):
        """Asks around the fair share: uniform from half of it to one and a half times it."""
        fair = self.params.golds / self.params.agents
        return rng.randint(round(fair / 2), round(fair * 1.5))


RUNS = 1
scenario = DivideDollar()
