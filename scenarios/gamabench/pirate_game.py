"""The Pirate Game, as GAMA-Bench plays it (Huang et al. 2024, arXiv:2403.11807): 10 pirates,
ranked by seniority (player_0 the most senior), share 100 golds. The most senior pirate left
proposes how the golds go to each pirate still aboard and everyone aboard votes (the proposer
for); with at least half the votes the plan passes and the game ends, else the proposer is
thrown overboard and the next one proposes, in the next round (GAMA-Bench records a round per
proposal; with two aboard the proposer's own vote is half, so a plan passes). GAMA-Bench's
score: half how close the proposals are to the subgame-perfect plan, half how many votes are
the equilibrium's.

    python -m agentsim scenarios/gamabench/pirate_game.py --out results/pirate
    python -m agentsim score results/pirate
"""

from dataclasses import dataclass

from agentsim.gamekit import Options, Split
from agentsim.games.gamabench.base import Field, GamaGame, GamaParams
from agentsim.games.gamabench.rules import pirate_accepted, pirate_round
from agentsim.games.gamabench.scoring import equilibrium_plan


@dataclass(frozen=True, kw_only=True)
class PirateParams(GamaParams):
    max_rounds: int = 10
    gold: int = 100


class PirateGame(GamaGame[PirateParams]):
    name = "gamabench_pirate_game"
    game = "pirate_game"
    Params = PirateParams
    min_players = 1

    @property
    def rules(self):
        return self.gama_text("description", self.params.agents, self.params.gold, Field("order"), "") or (
            "You are {player}, one of {agents} pirates sharing {gold} golds; player_0 is the most senior, player_1 "
            "the next, and so on. The most senior pirate still aboard proposes how many golds each pirate aboard "
            "gets, and all pirates aboard vote on it, the proposer included. If at least half vote to accept, the "
            "golds are shared as proposed and the game ends; otherwise the proposer is thrown overboard and the "
            "next most senior pirate proposes.")

    def private(self, player, rng):
        return {**player.private, "order": player.index + 1}

    async def play_round(self, round):
        if self.params.exact:  # as GAMA-Bench's runner plays it (agentsim/games/gamabench/exact.py)
            return await self.play_exact(round)
        aboard = sorted(round.players, key=lambda player: player.index)
        proposer, voters = aboard[0], aboard[1:]
        gold = self.params.gold
        names = tuple(self.player_name(player.index) for player in aboard)
        plan = await round.ask(proposer, Split(len(aboard), gold, labels=names), "Round {round}: you propose. How "
                               "many golds does each pirate aboard get?", move="propose")
        shares = ", ".join(f"{name} {share}" for name, share in zip(names, plan))
        votes = await round.ask_each(voters, Options("accept", "reject"), "Round {round}: {proposer} proposes "
                                     "{shares}. Do you accept or reject?", move="vote", proposer=names[0], shares=shares)
        record = pirate_round(list(plan), ["accept", *(votes[voter] for voter in voters)])
        if pirate_accepted(record):
            for player, share in zip(aboard, plan):
                round.pay(player, share)
            round.end("a plan passed")
        else:
            round.eliminate(proposer, "thrown overboard")
        passed = "passed" if pirate_accepted(record) else "failed; the proposer was thrown overboard"
        round.tell(None, f"{names[0]} proposed {shares}; the plan {passed}.")
        round.record(**record)

    def standin_choice(self, ask, rng):
        """Proposes the subgame-perfect plan; votes for an offer of 2 or more, against one of
        nothing, and at random on an offer of 1."""
        if ask.move == "propose":
            return equilibrium_plan(ask.choice.parts, self.params.gold)
        mine = int(ask.fact("shares").split(f"{ask.player} ")[1].split(",")[0])
        return "accept" if mine >= 2 else "reject" if mine == 0 else rng.choice(("accept", "reject"))


RUNS = 1
scenario = PirateGame()
