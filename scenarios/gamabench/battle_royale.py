"""Battle Royale, as GAMA-Bench plays it (Huang et al. 2024, arXiv:2403.11807): 10 players
with hit rates from 35% (player_0) to 80% (player_9), 5 points apart, take turns in that order
for up to 20 rounds; the one whose turn it is shoots at another player still in the game (hit
with its own hit rate, the dice from the run's seed: the player hit is out) or misses on
purpose. The last one standing wins. GAMA-Bench's score: the share of turns aimed at the
strongest other player left.

    python -m agentsim scenarios/gamabench/battle_royale.py --out results/battle
    python -m agentsim score results/battle
"""

from dataclasses import dataclass

from agentsim.gamekit import Options
from agentsim.games.gamabench.base import Field, GamaGame, GamaParams
from agentsim.games.gamabench.rules import battle_round, hit_rates

FORMAT = 'Reply with this JSON object and nothing else: {"action": "shoot" or "miss", "target": a player\'s name or "null"}'


@dataclass(frozen=True, kw_only=True)
class BattleParams(GamaParams):
    base_hit_rate: int = 35
    interval: int = 5


class BattleRoyale(GamaGame[BattleParams]):
    name = "gamabench_battle_royale"
    game = "battle_royale"
    Params = BattleParams
    question = "Round {round}: it is your turn. Whom do you shoot at? Name {miss} to miss on purpose."

    def private(self, player, rng):
        return {**player.private, "hit_rate": hit_rates(self.gama())[player.index], "order": player.index + 1}

    @property
    def rules(self):
        rates = hit_rates(self.gama())
        listed = ", ".join(f"{self.player_name(index)} {rate}%" for index, rate in enumerate(rates))
        order = [{"player": self.player_name(index), "hit_rate": f"{rate}%"} for index, rate in enumerate(rates)]
        return self.gama_text("description", self.params.agents, order, Field("player"), Field("hit_rate"),
                              Field("order"), "") or (
            "You are {player}, one of {agents} players of a shooting game of at most {rounds} rounds. The players and "
            f"the chance that each one's shot hits: {listed}. Players take turns in that order; at its turn a player "
            "shoots at another player still in the game, or misses on purpose. A player hit is out of the game. The "
            "last player standing wins.")

    async def play_round(self, round):
        if self.params.exact:  # as GAMA-Bench's runner plays it (agentsim/games/gamabench/exact.py)
            return await self.play_exact(round)
        alive = sorted(player.index for player in round.players)
        last = max(round.players, key=lambda player: player.private.get("shot_in", 0))
        after = [index for index in alive if index > last.index] if last.private.get("shot_in") else alive
        shooter = next(player for player in round.players if player.index == (after or alive)[0])
        names = [self.player_name(index) for index in alive if index != shooter.index]
        miss, p = ("null" if self.params.prompt_templates else "nobody"), shooter.private
        asked = self.gama_text("request", round.number, names, shooter.name, p["hit_rate"], p["order"], FORMAT)
        aimed = await round.ask(shooter, Options(*names, miss), asked or self.question, miss=miss)
        target = None if aimed == miss else int(aimed.removeprefix("player_"))
        record = battle_round(shooter.index, target, alive, self.gama(), round.random)
        round.keep(shooter, shot_in=round.number)  # whose turn is next follows from whose it was
        if record["out"]:
            round.eliminate(next(player for player in round.players if player.index == target), "shot")
            round.pay(shooter, 1)
        what = "missed on purpose" if target is None else f"shot at {aimed} and {'hit' if record['out'] else 'missed'}"
        left = len(alive) - record["out"]
        round.tell(None, f"{self.player_name(shooter.index)} {what}; {left} players are left.")
        round.record(**record)
        if left == 1:  # two were left and the shooter hit: the last one standing
            round.win(shooter)
            round.end("one player left")

    def standin_choice(self, ask, rng):
        """Aims at the strongest other player left (the highest number), as the score rewards,
        one turn in five at another one at random."""
        targets = [label for label in ask.choice.options if label not in ("nobody", "null")]
        return targets[-1] if rng.random() < 0.8 else rng.choice(targets)


RUNS = 1
scenario = BattleRoyale()
