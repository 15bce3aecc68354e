"""Guess 2/3 of the Average, as GAMA-Bench plays it (Huang et al. 2024, arXiv:2403.11807):
10 players pick a whole number from 0 to 100 for 20 rounds; whoever is nearest 2/3 of the
average wins the round. The equilibrium is everyone at 0; GAMA-Bench's score is 100 minus the
mean over rounds of the average pick (scaled to the range).

    python -m agentsim scenarios/gamabench/guessing_game.py --out results/guessing
    python -m agentsim score results/guessing
    python -m agentsim scenarios/gamabench/guessing_game.py --set prompt_templates=PATH/TO/GAMABench/prompt_template --set version=v2
"""

from dataclasses import dataclass

from agentsim.gamekit import Number
from agentsim.games.gamabench.base import GamaGame, GamaParams
from agentsim.games.gamabench.rules import guessing_round

FORMAT = 'Reply with this JSON object and nothing else: {"chosen_number": a whole number from 0 to 100}'


@dataclass(frozen=True, kw_only=True)
class GuessingParams(GamaParams):
    min: int = 0
    max: int = 100
    ratio: float = 2 / 3
    ratio_str: str = "2/3"


class GuessingGame(GamaGame[GuessingParams]):
    name = "gamabench_guessing_game"
    game = "guessing_game"
    Params = GuessingParams
    question = "Round {round}: which whole number from {min} to {max} do you pick?"

    @property
    def rules(self):
        p = self.params
        return self.gama_text("description", p.agents, p.max_rounds, p.min, p.max, p.ratio_str, "") or (
            "You are {player}, one of {agents} players of a game of {rounds} rounds. Every round each player picks "
            "a whole number from {min} to {max}. The target is {ratio_str} of the average of all the numbers "
            "picked; the player whose number is nearest the target wins the round.")

    def choice(self, player):
        return Number(self.params.min, self.params.max)

    async def play_round(self, round):
        if self.params.exact:  # as GAMA-Bench's runner plays it (agentsim/games/gamabench/exact.py)
            return await self.play_exact(round)
        p = self.params
        asked = self.gama_text("request", round.number, p.ratio_str, p.min, p.max, FORMAT)
        await round.ask_each(round.players, self.choice, asked)
        self.outcome(round)

    def outcome(self, round):
        picks = [round.choices[player] for player in round.players]
        record = guessing_round(picks, self.gama())
        for player, pick in zip(round.players, picks):
            won = pick == record["winner"]
            if won:
                round.win(player)
                round.pay(player, 1)
            round.tell(player, self.gama_text("report", round.number, record["mean"], self.params.ratio_str,
                                              f"{record['mean_ratio']:.2f}", record["winner"], pick,
                                              "You won" if won else "You lost", template=False)
                       or f"The average was {record['mean']:.2f}, the target "
                          f"{record['mean_ratio']:.2f}, the winning number {record['winner']}; you {'won' if won else 'lost'}.")
        round.record(**record)

    def standin_choice(self, ask, rng):
        """Uniform from the range's low end to 2/3 of its top (no one picks a number no
        average can reach the target of)."""
        return rng.randint(self.params.min, round(self.params.min + (self.params.max - self.params.min) * self.params.ratio))


RUNS = 1
scenario = GuessingGame()
