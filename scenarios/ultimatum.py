"""The ultimatum game (Güth, Schmittberger and Schwarze 1982) with the stakes of Aher, Arriaga
and Kalai (2023, "Using Large Language Models to Simulate Multiple Humans and Replicate Human
Subject Studies"): $10, offers in whole dollars, the responder accepting (the split stands) or
rejecting (both get nothing). There a model played the responder to offers of $0-$10; here
models play both roles. Players meet in random pairs, the first of a pair proposing. One-shot,
as there; `--set max_rounds=5` plays five rounds with a new partner every round.

    python -m agentsim scenarios/ultimatum.py --out results/ultimatum
    python -m agentsim report results/ultimatum
    python -m agentsim transcript results/ultimatum --agent 0
"""

from dataclasses import dataclass

from agentsim.gamekit import Game, GameParams, Number, Options


@dataclass(frozen=True, kw_only=True)
class UltimatumParams(GameParams):
    agents: int = 20
    group_size: int = 2
    max_rounds: int = 1
    stake: int = 10


class Ultimatum(Game[UltimatumParams]):
    name = "ultimatum"
    Params = UltimatumParams
    moves = ("offer", "respond")  # each its own series (Mesa's mean_choice.offer)
    rules = ("You are {player}, a participant in an experiment of {rounds} round(s). Each round you are paired at "
             "random with another participant you do not know. One of you, the proposer, is given {stake} dollars "
             "and offers the other, the responder, a whole number of them. If the responder accepts, the responder "
             "gets the offer and the proposer keeps the rest; if the responder rejects, neither gets anything.")

    async def play_round(self, round):
        proposer, responder = round.players
        stake = self.params.stake
        offer = await round.ask(proposer, Number(0, stake), "Round {round}: you are the proposer. How many of the "
                                "{stake} dollars do you offer the responder?", move="offer")
        answer = await round.ask(responder, Options("accept", "reject"), "Round {round}: you are the responder. The "
                                 "proposer offers you {offer} of the {stake} dollars. Do you accept or reject?",
                                 move="respond", offer=offer)
        if answer == "accept":
            round.pay(proposer, stake - offer)
            round.pay(responder, offer)
        round.tell(None, f"The proposer offered {offer} of {stake} dollars and the responder {answer}ed.")
        round.record(offer=offer, accepted=answer == "accept")

    def standin_choice(self, ask, rng):
        """Offers of 30-50% of the stake, as most offers in the laboratory (Camerer 2003); an
        offer under 30% rejected with probability 1/2, any other accepted."""
        stake = self.params.stake
        if ask.move == "offer":
            return rng.randint(round(0.3 * stake), stake // 2)
        return "reject" if ask.fact("offer") < 0.3 * stake and rng.random() < 0.5 else "accept"


RUNS = 2
scenario = Ultimatum()
