"""The trust (investment) game of Berg, Dickhaut and McCabe (1995), set up as Xie et al. (2024,
"Can Large Language Model Agents Simulate Human Trust Behavior?") ran it with language models:
the trustor receives $10 and sends the trustee any whole number N of them; the trustee
receives 3N and returns any whole number of those 3N. Players meet in random pairs, the first
of a pair being the trustor. One-shot, as there; `--set max_rounds=5` plays five rounds with a
new partner every round (their repeated game keeps the pair: `--set group_size=0 agents=2`).

    python -m agentsim scenarios/trust_game.py --out results/trust_game
    python -m agentsim report results/trust_game
    python -m agentsim transcript results/trust_game --agent 1
"""

from dataclasses import dataclass

from agentsim.gamekit import Game, GameParams, Number


@dataclass(frozen=True, kw_only=True)
class TrustParams(GameParams):
    agents: int = 20
    group_size: int = 2
    max_rounds: int = 1
    endowment: int = 10
    multiplier: int = 3


class TrustGame(Game[TrustParams]):
    name = "trust_game"
    Params = TrustParams
    moves = ("send", "return")  # each its own series (Mesa's mean_choice.send)
    rules = ("You are {player}, a participant in an experiment of {rounds} round(s). Each round you are paired at "
             "random with another participant you do not know. One of you, the trustor, receives {endowment} "
             "dollars and can give any whole number N of them to the other, the trustee, who then receives "
             "{multiplier}N dollars and can choose how many of those to return to the trustor.")

    async def play_round(self, round):
        trustor, trustee = round.players
        sent = await round.ask(trustor, Number(0, self.params.endowment), "Round {round}: you are the trustor. How "
                               "many of your {endowment} dollars do you give the trustee?", move="send")
        received = sent * self.params.multiplier
        returned = 0
        if received:
            returned = await round.ask(trustee, Number(0, received), "Round {round}: you are the trustee. The trustor "
                                       "gave you {sent} dollars, so you received {received}. How many of them do you "
                                       "return to the trustor?", move="return", sent=sent, received=received)
        round.pay(trustor, self.params.endowment - sent + returned)
        round.pay(trustee, received - returned)
        round.tell(None, f"The trustor gave {sent} dollars; the trustee received {received} and returned {returned}.")
        round.record(sent=sent, returned=returned, returned_share=returned / received if received else None)

    def standin_choice(self, ask, rng):
        """About half the endowment sent and a third of the received amount returned, the
        laboratory's means (Johnson and Mislin 2011), +-2 dollars."""
        if ask.move == "send":
            return min(self.params.endowment, max(0, self.params.endowment // 2 + rng.randint(-2, 2)))
        received = ask.fact("received")
        return min(received, max(0, received // 3 + rng.randint(-2, 2)))


RUNS = 2
scenario = TrustGame()
