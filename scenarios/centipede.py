"""The six-move centipede game of McKelvey and Palfrey (1992): two players take turns before a
large and a small pile of money (40 and 10 cents at first). The player to move TAKEs the large
pile (the other gets the small one, and the game ends) or PASSes (both piles double and the
other player moves). After six passes the first mover gets 25.60 dollars and the second 6.40.
Backward induction says TAKE at once; people (and models) pass. Random pairs every round,
the first of a pair moving first; the players are asked in turn within the round.

    python -m agentsim scenarios/centipede.py --out results/centipede
    python -m agentsim report results/centipede
    python -m agentsim transcript results/centipede --run 1 --round 1
"""

from dataclasses import dataclass

from agentsim.gamekit import Game, GameParams, Options


@dataclass(frozen=True, kw_only=True)
class CentipedeParams(GameParams):
    agents: int = 10
    group_size: int = 2
    max_rounds: int = 5
    nodes: int = 6
    large: int = 40  # cents, doubling at every pass
    small: int = 10


class Centipede(Game[CentipedeParams]):
    name = "centipede"
    Params = CentipedeParams
    rules = ("You are {player}, paired with another player; each round you meet a new partner. Two piles of money lie "
             "on the table, {large} and {small} cents. The player to move either TAKEs the large pile (the other "
             "player gets the small one, and the round ends) or PASSes (both piles double and the other player "
             "moves). The first player moves first; after {nodes} passes the first player gets the large pile.")
    question = "Round {round}, move {node} of {nodes}: the piles are {big} and {little} cents. TAKE or PASS?"

    def piles(self, node):
        return self.params.large * 2 ** (node - 1), self.params.small * 2 ** (node - 1)

    async def play_round(self, round):
        first, second = round.players
        for node in range(1, self.params.nodes + 1):
            mover, other = (first, second) if node % 2 else (second, first)
            big, little = self.piles(node)
            if await round.ask(mover, Options("TAKE", "PASS"), node=node, big=big, little=little) == "TAKE":
                round.pay(mover, big)
                round.pay(other, little)
                round.tell(None, f"{mover.name} took {big} cents at move {node}; the other player got {little}.")
                round.record(taken_at=node)
                return
        big, little = self.piles(self.params.nodes + 1)
        round.pay(first, big)
        round.pay(second, little)
        round.tell(None, f"Both passed {self.params.nodes} times: the first player got {big} cents, the second {little}.")
        round.record(taken_at=None)

    def standin_choice(self, ask, rng):
        """TAKE with a chance that grows with the move, as in the laboratory (McKelvey and
        Palfrey 1992: about 0.1 at the first move to about 0.7 at the last)."""
        return "TAKE" if rng.random() < 0.1 + 0.6 * (ask.fact("node") - 1) / max(self.params.nodes - 1, 1) else "PASS"


RUNS = 2
scenario = Centipede()
