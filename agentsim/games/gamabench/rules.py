"""The eight GAMA-Bench games' round outcomes, as plain functions of the players' choices and
the game's parameters (Huang et al. 2024, arXiv:2403.11807, section 3).

Every function returns the round's record in the shape GAMA-Bench's `raw_results` keep under
`round_records` (the keys its scores read: `responses`, `mean`, `winner`, `go_num`, ...), so an
agentsim run and an imported one are scored by the same code (scoring.py). `payoffs` gives each
player's payoff in a round from such a record: what the store keeps as a move's payoff.
Parameters use GAMA-Bench's names (`player_num`, `ratio`, `golds`, ...); `PARAMETERS` holds its
defaults. Where chance enters (an auction's tie, a shot that may miss), the caller passes the
run's own random generator.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from statistics import mean
from typing import Any

Params = Mapping[str, Any]
Record = dict[str, Any]

FIRST_PRICE, SECOND_PRICE = "highest bid", "second highest bid"

# GAMA-Bench's defaults (10 players, 20 rounds) per game, under its parameter names.
PARAMETERS: dict[str, dict[str, Any]] = {
    "guessing_game": {"player_num": 10, "min": 0, "max": 100, "ratio": 2 / 3, "ratio_str": "2/3"},
    "bar_game": {"player_num": 10, "min": 0, "max": 10, "home": 5, "ratio": 0.6, "ratio_str": "60%",
                 "mode": "implicit"},
    "divide_dollar": {"player_num": 10, "golds": 100},
    "public_goods": {"player_num": 10, "tokens": 20, "ratio": 2},
    "diner_dilemma": {"player_num": 10, "cheap_cost": 10, "cheap_utility": 15, "exp_cost": 20, "exp_utility": 20},
    "sealed_bid_auction": {"player_num": 10, "valuation_min": 0, "valuation_max": 200, "interval": 10,
                           "mode": FIRST_PRICE},
    "battle_royale": {"player_num": 10, "base_hit_rate": 35, "interval": 5},
    "pirate_game": {"player_num": 10, "gold": 100},
}
ROUNDS = 20


def guessing_round(responses: Sequence[int], params: Params) -> Record:
    """Everyone names a number; who is nearest `ratio` times the mean wins (ties: all of them)."""
    average = mean(responses)
    target = average * params["ratio"]
    winner = min(responses, key=lambda number: abs(number - target))
    return {"responses": list(responses), "mean": average, "mean_ratio": target, "winner": winner,
            "winner_num": list(responses).count(winner)}


def bar_round(responses: Sequence[str], params: Params) -> Record:
    """Going is fun unless more than `ratio` of the players go; staying home pays `home`."""
    went = list(responses).count("go")
    share = went / params["player_num"]
    winner = "go" if share <= params["ratio"] else "stay"
    return {"responses": list(responses), "go_num": went, "go_ratio": share, "winner": winner,
            "utility": params["max"] if winner == "go" else params["min"]}


def dollar_round(responses: Sequence[int], params: Params) -> Record:
    """Each asks for a share of `golds`; all get theirs only if the asks fit in the budget."""
    return {"responses": list(responses), "total_proposal": sum(responses)}


def goods_round(responses: Sequence[int], params: Params) -> Record:
    """Contributions to the pot are multiplied by `ratio` and shared equally."""
    return {"responses": list(responses), "total_tokens": sum(responses)}


def diner_round(responses: Sequence[str], params: Params) -> Record:
    """Everyone orders a cheap or a costly dish and the bill is split equally."""
    players = params["player_num"]
    cheap = list(responses).count("cheap")
    total = cheap * params["cheap_cost"] + (players - cheap) * params["exp_cost"]
    return {"responses": list(responses), "cheap_player": cheap, "total_cost": total,
            "cost_msg": f"{players - cheap} * {params['exp_cost']} + {cheap} * {params['cheap_cost']} = {total}",
            "avg_cost": total / players}


def valuations(params: Params, rng: random.Random) -> list[int]:
    """Each bidder's private value this round: distinct steps of `interval` in the range."""
    steps = range(params["valuation_min"], params["valuation_max"] + params["interval"], params["interval"])
    return rng.sample(steps, params["player_num"])


def auction_round(bids: Sequence[int], values: Sequence[int], params: Params, rng: random.Random) -> Record:
    """The highest bid wins (a tie drawn by `rng`) and pays its bid (first price) or the
    second-highest bid (second price)."""
    top = max(bids)
    winner = rng.choice([index for index, bid in enumerate(bids) if bid == top])
    price = sorted(bids)[-2] if params["mode"] == SECOND_PRICE and len(bids) > 1 else top
    utility = [values[index] - price if index == winner else 0 for index in range(len(bids))]
    return {"responses": list(bids), "bid_winner": f"player_{winner}", "bid_winner_proposed": top,
            "bid_winner_payment": price, "utility": utility, "valuations": list(values)}


def hit_rates(params: Params) -> list[int]:
    """Battle Royale's hit rates in percent, rising with the player's number (who shoots first)."""
    return [params["base_hit_rate"] + params["interval"] * index for index in range(params["player_num"])]


def battle_round(shooter: int, target: int | None, alive: Sequence[int], params: Params, rng: random.Random) -> Record:
    """`shooter` fires at `target` (None: misses on purpose) and hits with its hit rate; a
    player hit is out. `alive` is who was in the game before the shot."""
    rates = hit_rates(params)
    hit = target is not None and target in alive and rng.random() < rates[shooter] / 100
    return {"responses": ["null" if target is None else str(target)], "player_shooting": str(shooter),
            "initial_players": [[f"player_{index}", rates[index]] for index in alive],
            "shot_player": "null" if target is None else str(target),
            "action": "miss" if target is None else "shoot", "out": bool(hit)}


def runner_battle_round(shooter: int, target: str, alive: Sequence[int], params: Params,
                        hits: Callable[[int], bool]) -> Record:
    """Battle Royale's round as GAMA-Bench's runner plays it (GAMA-Bench-exact mode): the
    reply's action is not read; a target "null" (or one holding "-1") is a miss on purpose;
    any other is matched as a part of a name among the players still in, the first in order
    ("3" is player_3, "" is player_0), whom the shot hits as `hits(rate)` draws with the
    shooter's hit rate; a target matching no one is a shot at no one, which hits nobody."""
    rates = hit_rates(params)
    shot, action, out = target, "shoot", False
    if "-1" in target or target == "null":
        action = "miss"
    else:
        match = next((index for index in alive if target in f"player_{index}"), None)
        if match is not None:
            shot, out = f"player_{match}", bool(hits(rates[shooter]))
    parts = shot.split("_")
    return {"responses": [target], "player_shooting": str(shooter),
            "initial_players": [[f"player_{index}", rates[index]] for index in alive],
            "shot_player": parts[1] if len(parts) > 1 else shot, "action": action, "out": out}


def pirate_round(distribution: Sequence[int], votes: Sequence[str]) -> Record:
    """The most senior pirate left proposes `distribution` (its own share first) and everyone
    left votes (the proposer accepts); it passes with at least half the votes."""
    return {"gold_distribution": list(distribution), "responses": list(votes)}


def pirate_accepted(record: Mapping[str, Any]) -> bool:
    votes = record["responses"]
    return sum(vote == "accept" for vote in votes) / len(votes) >= 0.5


def payoffs(game: str, record: Mapping[str, Any], params: Params) -> list[float]:
    """Each responding player's payoff in a round, in the order of `record['responses']`."""
    responses = record["responses"]
    if game == "guessing_game":
        return [1.0 if response == record["winner"] else 0.0 for response in responses]
    if game == "bar_game":
        went = {"go": params["max"], "stay": params["min"]}[record["winner"]]
        return [float(params["home"] if response == "stay" else went) for response in responses]
    if game == "divide_dollar":
        fits = record["total_proposal"] <= params["golds"]
        return [float(response) if fits else 0.0 for response in responses]
    if game == "public_goods":
        share = record["total_tokens"] * params["ratio"] / params["player_num"]
        return [params["tokens"] - response + share for response in responses]
    if game == "diner_dilemma":
        return [(params["cheap_utility"] if response == "cheap" else params["exp_utility"]) - record["avg_cost"]
                for response in responses]
    if game == "sealed_bid_auction":
        return [float(value) for value in record["utility"]]
    if game == "battle_royale":
        return [1.0 if record["out"] else 0.0]
    if game == "pirate_game":
        accepted = pirate_accepted(record)
        return [float(gold) if accepted else 0.0 for gold in record["gold_distribution"]]
    raise KeyError(game)
