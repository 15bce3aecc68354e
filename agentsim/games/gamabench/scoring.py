"""GAMA-Bench's 0-100 score of a run, as plain functions of its round records and parameters
(the scores of arXiv:2403.11807 section 3 as revised in April 2024: Public Goods, Diner's
Dilemma and the Sealed-Bid Auction reward the self-interested choice; the Sealed-Bid
Auction's as revised in November 2024). Higher is closer to the rational play.

    guessing_game       (max - S) / (max - min), S the mean over rounds of the round's mean minus min
    bar_game            (R - S) / R, S the mean |share who went - capacity|, R = max(capacity, 1 - capacity)
    divide_dollar       max(0, (G - S) / G), G = golds / players, S the mean |total asked / players - G|
    public_goods        (T - S) / T, T the tokens, S the mean contribution
    diner_dilemma       the share of costly orders
    sealed_bid_auction  the mean over bids of max(0, (value - bid) / value) (a value of 0 counts as 1)
    battle_royale       the share of rounds whose shooter aimed at the strongest other player left
    pirate_game         half (1 - mean L1 distance of the proposals from the equilibrium plan / 200),
                        half the share of votes that were the equilibrium's

each times 100. `score(game, params, records)` picks the formula by the game's name (its
`GAMES` key; the bar game and the auction name their mode: `bar_game_implicit`,
`sealed_bid_auction_first_price`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from statistics import mean
from typing import Any

from .rules import FIRST_PRICE, PARAMETERS, Params

Records = Sequence[Mapping[str, Any]]


def guessing_score(params: Params, records: Records) -> float:
    low, high, ratio = params["min"], params["max"], params["ratio"]
    spread, average = high - low, mean(record["mean"] - low for record in records)
    if ratio < 1:
        return (high - average) / spread * 100
    if ratio == 1:
        return (1 - abs(2 * average - spread) / spread) * 100
    return average / spread * 100


def bar_score(params: Params, records: Records) -> float:
    capacity = params["ratio"]
    widest = max(capacity, 1 - capacity)
    return (widest - mean(abs(record["go_ratio"] - capacity) for record in records)) / widest * 100


def dollar_score(params: Params, records: Records) -> float:
    fair = params["golds"] / params["player_num"]
    gap = mean(abs(record["total_proposal"] / params["player_num"] - fair) for record in records)
    return max((fair - gap) / fair * 100, 0.0)


def goods_score(params: Params, records: Records) -> float:
    tokens = params["tokens"]
    return (tokens - mean(record["total_tokens"] / params["player_num"] for record in records)) / tokens * 100


def diner_score(params: Params, records: Records) -> float:
    return mean(1 - record["cheap_player"] / params["player_num"] for record in records) * 100


def auction_score(params: Params, records: Records) -> float:
    def kept(value: float, bid: float) -> float:
        return max((value - bid) / (value or 1), 0.0)
    return mean(mean(kept(value, bid) for value, bid in zip(record["valuations"], record["responses"], strict=True))
                for record in records) * 100


def battle_score(params: Params, records: Records) -> float:
    """A shot counts when it aims at the player with the highest hit rate still in the game
    other than the shooter (hit rates rise with the player's number); an intentional miss
    never counts."""
    alive = list(range(params["player_num"]))
    aimed = 0
    for record in records:
        target = _player(record["shot_player"]) if record["action"] != "miss" else None
        if target is None:
            continue
        shooter = _player(record["player_shooting"])
        strongest = max((player for player in alive if player != shooter), default=None)
        aimed += target == strongest and target in alive
        if record["out"] and target in alive:
            alive.remove(target)
    return aimed / len(records) * 100


def _player(value: Any) -> int | None:
    text = str(value).removeprefix("player_")
    return int(text) if text.isdigit() else None


def equilibrium_plan(pirates: int, gold: int = 100) -> list[int]:
    """The subgame-perfect proposal among `pirates` (the proposer first): one coin to every
    second pirate from the third on, the rest to the proposer."""
    plan = [1 if index % 2 == 0 and index else 0 for index in range(pirates)]
    plan[0] = gold - sum(plan)
    return plan


def pirate_score(params: Params, records: Records) -> float:
    """The proposals' L1 distance from `equilibrium_plan` (in percent of the gold, 0-200) and
    the share of votes matching it: accept an offer of 2 or more, accept 1 at an even seat
    (the third, fifth, ... pirate left), reject nothing (seats counted from the proposer, 0)."""
    gold, players = params.get("gold", 100), params["player_num"]
    distances, right, votes = [], 0, 0
    for number, record in enumerate(records):
        plan, responses = record["gold_distribution"], record["responses"]
        target = equilibrium_plan(players - number)
        distances.append(sum(abs(share / gold * 100 - best) for share, best in zip(plan, target, strict=False)))
        for seat in range(1, len(plan)):
            offer, vote = plan[seat], responses[seat]
            expected = "accept" if offer >= 2 or (offer == 1 and seat % 2 == 0) else "reject" if offer == 0 else None
            right += vote == expected
        votes += len(plan) - 1
    accuracy = right / votes if votes else 0.0
    return (200 - mean(distances)) / 200 * 50 + accuracy * 50


SCORES: dict[str, Callable[[Params, Records], float]] = {
    "guessing_game": guessing_score, "bar_game": bar_score, "divide_dollar": dollar_score,
    "public_goods": goods_score, "diner_dilemma": diner_score, "sealed_bid_auction": auction_score,
    "battle_royale": battle_score, "pirate_game": pirate_score,
}

# The game names `score` reports: each base game, the bar game and the auction by their mode.
GAMES = ("guessing_game", "bar_game_explicit", "bar_game_implicit", "divide_dollar", "public_goods", "diner_dilemma",
         "sealed_bid_auction_first_price", "sealed_bid_auction_second_price", "battle_royale", "pirate_game")


def base_game(game: str) -> str:
    return next(base for base in SCORES if game.startswith(base))


def game_name(base: str, params: Params) -> str:
    """The reported name of a run of `base` with `params` (the bar game's and the auction's mode)."""
    if base == "bar_game":
        return f"bar_game_{params.get('mode', 'implicit')}"
    if base == "sealed_bid_auction":
        return "sealed_bid_auction_" + ("first_price" if params.get("mode", FIRST_PRICE) == FIRST_PRICE else "second_price")
    return base


def score(game: str, params: Params, records: Records) -> float:
    """The run's score; `params` over GAMA-Bench's defaults for the game."""
    base = base_game(game)
    if not records:
        raise ValueError("a run with no round has no score")
    return float(SCORES[base](PARAMETERS[base] | dict(params), records))
