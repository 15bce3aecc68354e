"""El Farol Bar, as GAMA-Bench plays it (Huang et al. 2024, arXiv:2403.11807): 10 players
decide for 20 rounds whether to go to a bar that is fun (10) if at most 60% of them go and
dull (0) if more do; staying home gives 5. `mode=implicit` (the default, the leaderboard's):
a player who stayed home learns only its own payoff; `--set mode=explicit`: everyone learns
how many went. GAMA-Bench's score: 100 when the share who go is always the capacity.

    python -m agentsim scenarios/gamabench/bar_game.py --out results/bar --set mode=explicit
    python -m agentsim score results/bar
"""

from dataclasses import dataclass

from agentsim.gamekit import Options
from agentsim.games.gamabench.base import GamaGame, GamaParams
from agentsim.games.gamabench.rules import bar_round, payoffs
from agentsim.params import require

FORMAT = 'Reply with this JSON object and nothing else: {"decision": "go" or "stay"}'


@dataclass(frozen=True, kw_only=True)
class BarParams(GamaParams):
    min: int = 0
    max: int = 10
    home: int = 5
    ratio: float = 0.6
    ratio_str: str = "60%"
    mode: str = "implicit"

    def validate(self):
        super().validate()
        require(self.mode in ("implicit", "explicit"), f"mode must be implicit or explicit (got {self.mode!r})")


class BarGame(GamaGame[BarParams]):
    name = "gamabench_bar_game"
    game = "bar_game"
    Params = BarParams
    question = "Round {round}: do you go to the bar or stay home?"

    @property
    def rules(self):
        p = self.params
        return self.gama_text("description", p.agents, p.max_rounds, p.ratio_str, p.max, p.min, p.home, "") or (
            "You are {player}, one of {agents} people who each decide, for {rounds} rounds, whether to go to the bar "
            "or stay home. If at most {ratio_str} of the people go, the bar is fun and those who went get {max}; if "
            "more go, it is crowded and those who went get {min}. Staying home always gets {home}.")

    async def play_round(self, round):
        if self.params.exact:  # as GAMA-Bench's runner plays it (agentsim/games/gamabench/exact.py)
            return await self.play_exact(round)
        asked = self.gama_text("request", round.number, self.params.ratio_str, FORMAT)
        await round.ask_each(round.players, Options("go", "stay"), asked)
        self.outcome(round)

    def outcome(self, round):
        p, params = self.params, self.gama()
        went = [round.choices[player] for player in round.players]
        record = bar_round(went, params)
        fun = record["winner"] == "go"
        for player, paid in zip(round.players, payoffs("bar_game", record, params)):
            round.pay(player, paid)
            mine = round.choices[player]
            if p.mode == "implicit" and mine == "stay":  # learns its own payoff only
                told = self.gama_text("report_implicit", round.number, mine, paid, template=False)
            else:
                told = self.gama_text("report_explicit", round.number, record["go_num"], p.agents - record["go_num"],
                                      p.agents, "at most" if fun else "more than", "more" if fun else "less",
                                      p.ratio_str, mine, paid, template=False) or (
                    f"{record['go_num']} of {p.agents} went; the bar was {'fun' if fun else 'crowded'}.")
            if told:
                round.tell(player, told)
        round.record(**record)

    def standin_choice(self, ask, rng):
        """Goes with the capacity's probability (60%): the mixed equilibrium's share."""
        return "go" if rng.random() < self.params.ratio else "stay"


RUNS = 1
scenario = BarGame()
