"""The Sealed-Bid Auction, as GAMA-Bench plays it (Huang et al. 2024, arXiv:2403.11807): for
20 rounds 10 bidders each learn a private value for the item (distinct values from 0 to 200 in
steps of 10, drawn each round from the run's seed) and bid once; the highest bid wins (a tie
drawn) and pays its bid (`mode="highest bid"`, first price, the leaderboard's) or the
second-highest bid (`--set "mode=second highest bid"`). GAMA-Bench's score (as revised in
2024): the mean share of its value a bidder keeps below it (a bid above the value counts 0).

    python -m agentsim scenarios/gamabench/sealed_bid_auction.py --out results/auction
    python -m agentsim score results/auction
"""

import asyncio
from dataclasses import dataclass

from agentsim.gamekit import Number
from agentsim.games.gamabench.base import GamaGame, GamaParams
from agentsim.games.gamabench.rules import FIRST_PRICE, SECOND_PRICE, auction_round, valuations
from agentsim.params import require

FORMAT = 'Reply with this JSON object and nothing else: {{"bid": a whole number from 0 to {value}}}'


@dataclass(frozen=True, kw_only=True)
class AuctionParams(GamaParams):
    valuation_min: int = 0
    valuation_max: int = 200
    interval: int = 10
    mode: str = FIRST_PRICE

    def validate(self):
        super().validate()
        require(self.mode in (FIRST_PRICE, SECOND_PRICE), f"mode must be '{FIRST_PRICE}' or '{SECOND_PRICE}'")


class SealedBidAuction(GamaGame[AuctionParams]):
    name = "gamabench_sealed_bid_auction"
    game = "sealed_bid_auction"
    Params = AuctionParams
    question = "Round {round}: the item is worth {value} to you. What do you bid?"

    @property
    def rules(self):
        p = self.params
        return self.gama_text("description", p.agents, p.max_rounds, p.mode, "") or (
            "You are {player}, one of {agents} bidders in a sealed-bid auction held {rounds} times. Each time you "
            "learn what the item is worth to you, and every bidder bids once without seeing the others' bids. The "
            "{mode} wins: the highest bidder gets the item and pays the {mode}. Your gain is the item's worth to "
            "you minus what you pay; bidders who do not win pay nothing.")

    async def play_round(self, round):
        if self.params.exact:  # as GAMA-Bench's runner plays it (agentsim/games/gamabench/exact.py)
            return await self.play_exact(round)
        values = valuations(self.gama(), round.random)
        asks = [round.ask(player, Number(0, self.params.valuation_max),
                          self.gama_text("request", round.number, value, FORMAT.format(value=value)), value=value)
                for player, value in zip(round.players, values)]
        bids = await asyncio.gather(*asks)
        record = auction_round(bids, values, self.gama(), round.random)  # the winner by seat: named by index
        record["bid_winner"] = self.player_name(round.players[int(record["bid_winner"].split("_")[1])].index)
        for player, gain in zip(round.players, record["utility"]):
            round.pay(player, gain)
            won = "won" if self.player_name(player.index) == record["bid_winner"] else "lost"
            value, bid = record["valuations"][round.players.index(player)], round.choices[player]
            round.tell(player, self.gama_text("report", round.number, value, bid, record["bid_winner_proposed"],
                                              record["bid_winner_payment"], won, gain, template=False)
                       or f"The highest bid was {record['bid_winner_proposed']}, "
                          f"the winner paid {record['bid_winner_payment']}; you {won}.")
        round.record(**record)

    def standin_choice(self, ask, rng):
        """Shades the bid: uniform from half the value to the value (never above it)."""
        value = ask.fact("value")
        return rng.randint(value // 2, value)


RUNS = 1
scenario = SealedBidAuction()
