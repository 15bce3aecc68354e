"""The iterated Stag Hunt of the cultural-evolution family (agentsim/games/evolution/stag_hunt.py,
Liu 2025) as one game file on the game layer (docs/games-layer.md): one game of it, without the
generations. Partners are drawn once and hunt together for eight rounds, each pair seeing every
earlier choice of the pair; a stag pays 10 to each of two stag hunters and nothing to a lone
one, a hare always pays its hunter 5 (the family's payoffs).

What stays with the family (tests/test_onefile_games.py says so too): the generations (each
player writes its strategy and norms first, the best half survives, newcomers inherit), the
stand-in that plays the numbers of a written strategy, and a fallback scored as a hare (here,
as on the whole layer, a fallback is a uniformly drawn option, left out of every share).

    python -m agentsim scenarios/stag_hunt_onefile.py --out results/stag_hunt_onefile
"""

import asyncio
from dataclasses import dataclass

from agentsim.gamekit import Game, GameParams, Options
from agentsim.params import require

HUNT = Options("STAG", "HARE")


@dataclass(frozen=True, kw_only=True)
class StagHuntParams(GameParams):
    agents: int = 4
    max_rounds: int = 8
    history_rounds: int = 8  # every earlier choice of the pair
    stag_stag: int = 10
    stag_alone: int = 0
    hare: int = 5
    hare_against_stag: int = 5

    def validate(self) -> None:
        super().validate()
        require(self.agents % 2 == 0, f"agents must be even: partners hunt in pairs (got {self.agents})")


class StagHuntOneFile(Game[StagHuntParams]):
    name = "stag_hunt_onefile"
    Params = StagHuntParams
    rules = ("You are {player}, hunting with the same partner for {rounds} rounds. Each round you both choose, at "
             "the same time, to hunt a STAG or a HARE. Two stag hunters get {stag_stag} points each; a lone stag "
             "hunter gets {stag_alone}; a hare hunter gets {hare} whatever the partner does.")
    question = "Round {round} of {rounds}, with {partner}: do you hunt a STAG or a HARE?"

    async def play_round(self, round):
        by_name = {player.name: player for player in round.players}
        pairs = [(by_name[a], by_name[b]) for a, b in round.players[0].private.get("pairs", [])]
        if not pairs:  # the first round: partners drawn with the round's dice, kept for the game
            order = list(round.players)
            round.random.shuffle(order)
            pairs = list(zip(order[::2], order[1::2], strict=True))
        partner = {**dict(pairs), **{b: a for a, b in pairs}}
        await asyncio.gather(*(round.ask(player, HUNT, partner=partner[player].name) for player in round.players))
        for player in round.players:
            mine, theirs = round.choices[player], round.choices[partner[player]]
            round.pay(player, self.payoff(mine, theirs))
            round.tell(player, f"{partner[player].name} hunted a {theirs}.")
            round.keep(player, pairs=[[a.name, b.name] for a, b in pairs], partner_hunted=theirs)
        round.record(pairs=[[a.index, b.index] for a, b in pairs])

    def payoff(self, mine, theirs):
        params = self.params
        if mine == "STAG":
            return params.stag_stag if theirs == "STAG" else params.stag_alone
        return params.hare_against_stag if theirs == "STAG" else params.hare

    def standin_choice(self, ask, rng):
        """Reciprocity: a stag with probability 1/2 in the first round, then 0.9 after the
        partner's stag and 0.2 after its hare (what the partner did is in the prompt)."""
        probability = {None: 0.5, "STAG": 0.9, "HARE": 0.2}[ask.fact("partner_hunted")]
        return "STAG" if rng.random() < probability else "HARE"


scenario = StagHuntOneFile()
