"""GAMA-Bench-exact mode (`--set exact=true`, with `prompt_templates` at the user's checkout):
each game asked, read, scored and told as GAMA-Bench's runner does it, beside agentsim's own
defaults (the scenario files' `play_round`). docs/reproducing-gamabench.md lists every
difference between the two.

What the runner does, and this module with it:

- **Texts.** The description, the round's request and the round's report from the checkout's
  templates, filled as its `get_prompt` fills them (the text stripped before its inputs are
  put in, so a description whose first input is an empty role message begins with two blank
  lines; a report cut at `<part>///</part>` into stripped parts); the sentences the runner
  writes itself (the JSON answer format, "Unfortunately you lost", ...) read from its
  `games/*.py` (checkout.py). Chain-of-thought (`cot=1..5`) and role prompts (`role=1..3`)
  as its conditions add them.
- **The conversation** (`structure`): for OpenAI-style models (`messages`) the description is
  the system message and each round adds the report's parts, the second as an assistant turn
  (the player's answer as the runner writes it back), the others as user turns; a request is
  sent after the conversation but never kept, a re-ask sends the same messages again, and
  after each round past the 20th (the Public Goods game: the 10th) the oldest message after
  the system message is dropped. For Gemini models (`gemini`) every part is kept: the
  description opens the first user turn, each attempt's request is added to the last user
  turn (a re-ask adds it again), a report's first part joins that turn, its second is the
  model's turn and the rest a new user turn; nothing is dropped. agentsim sends each part as
  a message of its own.
- **Reading** (exact_reading.py), **outcomes** (rules.py, the runner's Battle Royale rule
  included), **payoffs** as the runner's utilities: what it records for the bar, the dollar,
  the public goods (the tokens kept: the pot's share is not in it), the diner and the
  auction; nothing for the guessing game and Battle Royale; an accepted plan's share for the
  Pirate Game (the runner records none). The auction's values are drawn as the runner draws
  them (`random.seed(seed)` a round, counting up from `auction_seed`, 42) and a tie is broken
  with the same generator; the lone last pirate is asked to propose to itself.

A player's conversation is one of its private values (`CONVERSATION`), kept round to round
by the layer and recorded with every call; `codec.GamaCodec` turns it into messages.
"""

from __future__ import annotations

import ast
import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ...gamekit import Player, Round
from .checkout import Checkout
from .exact_reading import MISS, RunnerAnswer
from .rules import auction_round, bar_round, diner_round, dollar_round, goods_round, guessing_round, runner_battle_round
from .templates import PART, PromptTemplate

if TYPE_CHECKING:
    from .base import GamaGame

STRUCTURES = ("messages", "gemini")
CONVERSATION = "gamabench_conversation"  # a player's private value: its conversation's turns
STRUCTURE = "gamabench_structure"  # a fact of every exact ask
NEXT_SHOOTER = "gamabench_next_shooter"
KEEP_ROUNDS = {"public_goods": 10}  # the runner drops a message a round after this many (20 elsewhere)
MAX_TOKENS = 1024  # the runner's max_tokens for every model
Turns = list[list[Any]]  # [[role, [part, ...]], ...]; role "user" or "assistant"


def runner_render(template: PromptTemplate, *inputs: object) -> str | list[str]:
    """A template filled as the runner's `get_prompt` fills it: inputs put into the stripped
    text as `str()` writes them; cut into stripped parts where it has parts."""
    text = template.text
    for index, value in enumerate(inputs):
        text = text.replace(f"!<INPUT {index}>!", str(value))
    return [part.strip() for part in text.split(PART)] if PART in text else text


def ordinal(number: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th ... (Battle Royale's shooting order)."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def hyphen_ordinal(number: int) -> str:
    """1-st, 2-nd, 3-rd, 4-th, ... (the Pirate Game's seniority, the runner's spelling: 11-th, 21-th)."""
    return f"{number}-" + {1: "st", 2: "nd", 3: "rd"}.get(number, "th")


class RunnerTexts:
    """The runner's texts for one game, version and condition, from a checkout."""

    def __init__(self, checkout: Checkout, game: str, version: str, cot: int, role: int) -> None:
        self.checkout, self.game, self.version, self.cot, self.role = checkout, game, version, cot, role
        self.runner = checkout.runner(game)
        self.cot_message = " " + checkout.extra("cot_prompts", f"cot{cot}").text if cot else ""
        self.role_message = " " + checkout.extra("role_prompts", f"role{role}").text if role else ""

    def render(self, kind: str, *inputs: object) -> str | list[str]:
        return runner_render(self.checkout.template(self.game, kind, self.version), *inputs)

    def output_format(self, index: int, expected: int, **names: Any) -> str:
        """The `index`-th answer format `start` writes (with cot: the first of each pair), of
        `expected` the runner writes."""
        return self.runner.text("start", "output_format", index + (0 if self.cot else 1), {"cot_msg": self.cot_message,
                                                                                          **names}, expected)

    def checked_range(self, names: Mapping[str, Any]) -> tuple[int, int] | None:
        """The range `start` asks a number again outside of (its `parsered_responses > HIGH` and
        `< LOW`), where it checks one."""
        found: dict[type[ast.cmpop], int] = {}
        function = self.runner.methods.get("start")
        for node in ast.walk(function) if function else ():
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "parsered_responses" \
                    and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Gt, ast.Lt)):
                found[type(node.ops[0])] = int(self.runner.value(node.comparators[0], names))
        return (found[ast.Lt], found[ast.Gt]) if len(found) == 2 else None

    def sentence(self, method: str, name: str, index: int, expected: int, **names: Any) -> str:
        """The `index`-th of the `expected` texts `method` assigns to `name`, over `names`."""
        return self.runner.text(method, name, index, names, expected)


@lru_cache(maxsize=64)
def runner_texts(checkout: Checkout, game: str, version: str, cot: int, role: int) -> RunnerTexts:
    return RunnerTexts(checkout, game, version, cot, role)


def texts_of(game: GamaGame[Any]) -> RunnerTexts:
    p = game.params
    return runner_texts(game.checkout, game.game, p.version, p.cot, p.role)


# --- the description (the layer renders it as the rules) ----------------------------------------
def description(game: GamaGame[Any]) -> str:
    """The runner's description for `game`, as a layer template: braces escaped, the inputs
    that differ per player as the layer's fields ({player}, {hit_rate}, {order})."""
    texts, p, name = texts_of(game), game.runner_params(), game.game
    rounds, role = game.params.max_rounds, texts.role_message
    n = p["player_num"]
    inputs: Callable[[], tuple[object, ...]] = {
        "guessing_game": lambda: (n, rounds, p["min"], p["max"], p["ratio_str"], role),
        "bar_game": lambda: (n, rounds, p["ratio_str"], p["max"], p["min"], p["home"], role),
        "divide_dollar": lambda: (n, rounds, p["golds"], role),
        "public_goods": lambda: (n, rounds, p["ratio"], role),
        "diner_dilemma": lambda: (n, rounds, p["exp_cost"], p["exp_utility"], p["cheap_cost"], p["cheap_utility"], role),
        "sealed_bid_auction": lambda: (n, rounds, p["mode"], role),
        "battle_royale": lambda: (n, shooting_order(texts, p, range(n)), "\x00player\x00", "\x00hit_rate\x00",
                                  "\x00order\x00", role),
        "pirate_game": lambda: (n, p["gold"], "\x00order\x00", role),
    }[name]
    text = texts.render("description", *inputs())
    assert isinstance(text, str), "a description has no parts"
    escaped = text.replace("{", "{{").replace("}", "}}")
    for field in ("player", "hit_rate", "order"):
        escaped = escaped.replace(f"\x00{field}\x00", "{" + field + "}")
    return escaped


def system_of(game: GamaGame[Any], index: int) -> str:
    """The description player `index` is sent (the layer renders the same from the rules)."""
    p = game.runner_params()
    fields = {"player": game.player_name(index), "order": index + 1,
              "hit_rate": hit_rates(p)[index] if game.game == "battle_royale" else ""}
    return description(game).format_map(fields)


def hit_rates(p: Mapping[str, Any]) -> list[int]:
    return [p["base_hit_rate"] + p["interval"] * index for index in range(p["player_num"])]


def shooting_order(texts: RunnerTexts, p: Mapping[str, Any], alive: Sequence[int]) -> str:
    """The runner's list of the players still in, in shooting order, as JSON (one entry per
    player, built from its `player_info_str_print`)."""
    entry, rates = texts.runner.dictionary("player_info_str_print"), hit_rates(p)
    listed = [texts.runner.value(entry, {"self.ordinal": ordinal, "player_index": position, "player.id": f"player_{index}",
                                         "hit_rate": rates[index]})
              for position, index in enumerate(alive, start=1)]
    return json.dumps(listed, indent=0)


# --- asking and telling ---------------------------------------------------------------------------
def structure_of(game: GamaGame[Any]) -> str:
    return str(game.params.structure)


def turns_of(player: Player) -> Turns:
    return [[role, list(parts)] for role, parts in player.private.get(CONVERSATION, [])]


async def ask(game: GamaGame[Any], round_: Round, player: Player, request: str, answer: RunnerAnswer, move: str,
              **fields: Any) -> Any:
    """Ask `player` the runner's `request` (braces escaped for the layer's rendering)."""
    return await round_.ask(player, answer, request.replace("{", "{{").replace("}", "}}"), move=move,
                            **{STRUCTURE: structure_of(game)}, **fields)


def asked_of(round_: Round, player: Player) -> list[Any]:
    """The player's asks this round, in the order asked."""
    return [asked for asked in round_.in_order() if asked.player.index == player.index]


def tell(game: GamaGame[Any], round_: Round, reports: Mapping[Player, Sequence[str | list[str]]],
         dropped_after: int | None = None) -> None:
    """Each player's conversation after the round: the requests it was sent (kept only in the
    Gemini structure, once per attempt) and its reports, as the runner adds them; then the
    runner's drop of the oldest message (messages structure) past the round it keeps."""
    gemini = structure_of(game) == "gemini"
    keep = KEEP_ROUNDS.get(game.game, 20)
    for player in round_.players:
        turns = turns_of(player)
        for asked in asked_of(round_, player) if gemini else ():
            for _ in asked.decision.calls:  # the runner keeps every attempt's request
                _add_user(turns, asked.ask.prompt)
        for report in reports.get(player, ()):
            parts = [report] if isinstance(report, str) else report
            if not gemini:
                turns.extend(["assistant" if position == 1 else "user", [part]] for position, part in enumerate(parts))
            elif isinstance(report, str):  # a report with no parts: joins the last user turn
                _add_user(turns, report)
            else:
                _add_user(turns, parts[0])
                if len(parts) > 1:
                    turns.append(["assistant", [parts[1]]])
                    turns.append(["user", list(parts[2:])])
        if not gemini and (dropped_after or round_.number) > keep and turns:
            del turns[0]
        round_.keep(player, **{CONVERSATION: turns})


def _add_user(turns: Turns, text: str) -> None:
    if turns and turns[-1][0] == "user":
        turns[-1][1].append(text)
    else:
        turns.append(["user", [text]])


def messages_of(system: str, prompt: str, facts: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """The (role, text) messages of an exact ask (None: not one): the runner's conversation
    with this request, in its structure."""
    structure = facts.get(STRUCTURE)
    if structure not in STRUCTURES:
        return None
    turns: Turns = [[role, list(parts)] for role, parts in facts.get(CONVERSATION) or []]
    if structure == "messages":
        return [("system", system)] + [(role, part) for role, parts in turns for part in parts] + [("user", prompt)]
    return [(role, part) for role, parts in gemini_turns(system, prompt, turns) for part in parts]


def gemini_turns(system: str, prompt: str | None, turns: Turns) -> Turns:
    """The Gemini conversation as the runner keeps it: the description opens the first user
    turn, and `prompt` (this attempt's request) joins the last user turn."""
    turns = [[role, list(parts)] for role, parts in turns]
    if turns and turns[0][0] == "user":
        turns[0][1].insert(0, system)
    else:
        turns.insert(0, ["user", [system]])
    if prompt is not None:
        _add_user(turns, prompt)
    return turns


# --- the eight games -----------------------------------------------------------------------------
Play = Callable[["GamaGame[Any]", Round], Awaitable[None]]


async def _ask_everyone(game: GamaGame[Any], round_: Round, request: Callable[[Player], str], answer: RunnerAnswer,
                        fields: Callable[[Player], dict[str, Any]] | None = None) -> list[Any]:
    asks = [ask(game, round_, player, request(player), answer, "choose", **(fields(player) if fields else {}))
            for player in round_.players]
    return list(await asyncio.gather(*asks))


async def guessing(game: GamaGame[Any], round_: Round) -> None:
    texts, p, number = texts_of(game), game.runner_params(), round_.number
    answer_format = texts.output_format(0, 2, **{"self.min": p["min"], "self.max": p["max"]})
    request = texts.render("request", number, p["ratio_str"], p["min"], p["max"], answer_format)
    within = texts.checked_range({"self.min": p["min"], "self.max": p["max"]})
    picks = await _ask_everyone(game, round_, lambda player: str(request),
                                RunnerAnswer(game="guessing_game", low=p["min"], high=p["max"], within=within))
    record = guessing_round(picks, p)
    reports = {}
    for player, pick in zip(round_.players, picks, strict=True):
        won = pick == record["winner"]
        if won:
            round_.win(player)
        message = texts.sentence("report_result", "won_msg", 0, 1, won=won)
        reports[player] = [texts.render("report", number, record["mean"], p["ratio_str"], f"{record['mean_ratio']:.2f}",
                                        record["winner"], pick, message)]
    tell(game, round_, reports)
    round_.record(**record)


async def bar(game: GamaGame[Any], round_: Round) -> None:
    texts, p, number = texts_of(game), game.runner_params(), round_.number
    request = texts.render("request", number, p["ratio_str"], texts.output_format(0, 2))
    choices = await _ask_everyone(game, round_, lambda player: str(request),
                                  RunnerAnswer(game="bar_game", labels=("go", "stay")))
    record = bar_round(choices, p)
    reports = {}
    for player, choice in zip(round_.players, choices, strict=True):
        utility = p["home"] if choice == "stay" else p["max"] if record["winner"] == "go" else p["min"]
        round_.pay(player, utility)
        if p["mode"] == "implicit" and choice == "stay":
            report = texts.render("report_implicit", number, choice, utility)
        else:
            names = {"round_record": record}
            report = texts.render("report_explicit", number, record["go_num"], p["player_num"] - record["go_num"],
                                  p["player_num"], texts.sentence("report_result", "number_msg", 0, 1, **names),
                                  texts.sentence("report_result", "fun_msg", 0, 1, **names), p["ratio_str"], choice, utility)
        reports[player] = [report]
    tell(game, round_, reports)
    round_.record(**record)


async def divide_dollar(game: GamaGame[Any], round_: Round) -> None:
    texts, p, number = texts_of(game), game.runner_params(), round_.number
    request = texts.render("request", number, p["golds"], texts.output_format(0, 2, **{"self.golds": p["golds"]}))
    bids = await _ask_everyone(game, round_, lambda player: str(request), RunnerAnswer(game="divide_dollar", high=p["golds"]))
    record = dollar_round(bids, p)
    won = record["total_proposal"] <= p["golds"]
    message = texts.sentence("report_result", "round_msg", 0, 1, won=won)
    reports = {}
    for player, bid in zip(round_.players, bids, strict=True):
        received = bid if won else 0
        round_.pay(player, received)
        reports[player] = [texts.render("report", number, bid, record["total_proposal"], message, p["golds"], received)]
    tell(game, round_, reports)
    round_.record(**record)


async def public_goods(game: GamaGame[Any], round_: Round) -> None:
    texts, p, number = texts_of(game), game.runner_params(), round_.number
    tokens = p["tokens"]  # each round's endowment (the runner's fixed initialisation, reset every round)

    def request(player: Player) -> str:
        return str(texts.render("request", number, tokens, texts.output_format(0, 2, **{"player.tokens": [tokens]})))

    given = await _ask_everyone(game, round_, request, RunnerAnswer(game="public_goods", high=tokens))
    record = goods_round(given, p)
    total = record["total_tokens"]
    after = [round(tokens - gave + total * p["ratio"] / p["player_num"], 2) for gave in given]
    reports = {}
    for index, (player, gave) in enumerate(zip(round_.players, given, strict=True)):
        round_.pay(player, tokens - gave)  # the runner's utility: the tokens kept
        reports[player] = [texts.render("report", number, given, gave, total,
                                        round(total * p["ratio"] / p["player_num"] - gave, 2), after[index], after)]
    tell(game, round_, reports)
    round_.record(**record)


async def diner_dilemma(game: GamaGame[Any], round_: Round) -> None:
    texts, p, number = texts_of(game), game.runner_params(), round_.number
    request = texts.render("request", number, texts.output_format(0, 2))
    dishes = await _ask_everyone(game, round_, lambda player: str(request),
                                 RunnerAnswer(game="diner_dilemma", labels=("cheap", "costly")))
    record = diner_round(dishes, p)
    reports = {}
    for player, dish in zip(round_.players, dishes, strict=True):
        utility = p["cheap_utility"] if dish == "cheap" else p["exp_utility"]
        revenue = utility - record["avg_cost"]
        round_.pay(player, revenue)
        message = texts.sentence("report_result", "player_revenue_msg", 0, 1, player_utility=utility, round_record=record,
                                 player_revenue=revenue, **{"self.player_num": p["player_num"]})
        reports[player] = [texts.render("report", number, p["player_num"] - record["cheap_player"], record["cheap_player"],
                                        record["cost_msg"], record["avg_cost"], dish, message)]
    tell(game, round_, reports)
    round_.record(**record)


async def sealed_bid_auction(game: GamaGame[Any], round_: Round) -> None:
    texts, p, number = texts_of(game), game.runner_params(), round_.number
    dice = random.Random(game.params.auction_seed + number - 1)  # the runner's random.seed(self.seed), a round
    values = dice.sample(range(p["valuation_min"], p["valuation_max"] + p["interval"], p["interval"]), len(round_.players))
    value_of = dict(zip(round_.players, values, strict=True))

    def request(player: Player) -> str:
        value = value_of[player]
        return str(texts.render("request", number, value, texts.output_format(0, 2, **{"player.valuation": [value]})))

    bids = await _ask_everyone(game, round_, request, RunnerAnswer(game="sealed_bid_auction", high=p["valuation_max"]),
                               lambda player: {"value": value_of[player]})
    record = auction_round(bids, values, p, dice)  # a tie drawn from the same generator, as the runner draws it
    record["bid_winner"] = round_.players[int(record["bid_winner"].split("_")[1])].name
    reports = {}
    for player, bid, utility in zip(round_.players, bids, record["utility"], strict=True):
        round_.pay(player, utility)
        result = texts.sentence("report_result", "result", 0, 1, round_record=record, **{"player.id": player.name})
        reports[player] = [texts.render("report", number, value_of[player], bid, str(record["bid_winner_proposed"]),
                                        str(record["bid_winner_payment"]), result, utility)]
    tell(game, round_, reports)
    round_.record(**record)


async def battle_royale(game: GamaGame[Any], round_: Round) -> None:
    texts, p, number = texts_of(game), game.runner_params(), round_.number
    alive = sorted(player.index for player in round_.players)
    by_index = {player.index: player for player in round_.players}
    shooter = by_index[next((player.private[NEXT_SHOOTER] for player in round_.players if NEXT_SHOOTER in player.private),
                            alive[0])]
    rates = hit_rates(p)
    answer_format = texts.output_format(0, 2)
    request = texts.render("request", number, shooting_order(texts, p, alive), shooter.name, rates[shooter.index],
                           alive.index(shooter.index) + 1, answer_format)
    names = [by_index[index].name for index in alive if index != shooter.index]
    target = await ask(game, round_, shooter, str(request),
                       RunnerAnswer(game="battle_royale", move="shoot", labels=(*names, MISS)), "shoot")
    record = runner_battle_round(shooter.index, str(target), alive, p,
                                 lambda rate: game.shot_hits(number, shooter.index, rate, round_.random))
    left = [index for index in alive if not (record["out"] and f"player_{index}" == f"player_{record['shot_player']}")]
    if len(left) < len(alive):
        round_.eliminate(by_index[next(index for index in alive if index not in left)], "shot")
    sentences = {"round_record": record}
    result = [texts.sentence("report_result", "result", position, 5, **sentences) for position in range(1, 5)]
    result2 = [texts.sentence("report_result", "result2", position, 5, **sentences) for position in range(1, 5)]
    said = result[0] if record["action"] == "miss" else result[1] + (result[2] if record["out"] else result[3])
    said2 = result2[0] if record["action"] == "miss" else result2[1] + (result2[2] if record["out"] else result2[3])
    reports: dict[Player, list[str | list[str]]] = {}
    for index in left:
        player = by_index[index]
        own: list[str | list[str]] = []
        if index == shooter.index:
            own.append(texts.render("report2", number, record["action"], record["shot_player"], said2, len(left)))
        own.append(texts.render("report", number, shooter.name, said, len(left)))
        reports[player] = own
    # the next shooter: the next one still in, in the first round's order, after this one
    order = list(range(p["player_num"]))
    following = [order[(order.index(shooter.index) + step) % len(order)] for step in range(1, len(order))]
    after = next((index for index in following if index in left and index != shooter.index), None)
    tell(game, round_, reports, dropped_after=number + 1)  # the runner counts the round up before it saves
    for index in left:
        round_.keep(by_index[index], **{NEXT_SHOOTER: after})
    round_.record(**record)
    if len(left) == 1:
        round_.win(by_index[left[0]])
        round_.end("one player left")


async def pirate_game(game: GamaGame[Any], round_: Round) -> None:
    texts, p, number = texts_of(game), game.runner_params(), round_.number
    aboard = sorted(round_.players, key=lambda player: player.index)
    proposer, voters, rank = aboard[0], aboard[1:], aboard[0].index + 1
    propose_format = texts.output_format(0, 4, g_input_0=rank, g_input_2=p["player_num"])
    request = texts.render("request2", rank, p["gold"], propose_format)
    plan = await ask(game, round_, proposer, str(request),
                     RunnerAnswer(game="pirate_game", move="propose", parts=len(aboard), total=p["gold"], low=rank,
                                  cot=bool(game.params.cot)), "propose")
    shares = [int(gold) for gold in plan.values()]
    votes: dict[Player, str] = {}
    if voters:
        vote_format = texts.output_format(2, 4)
        listed = ", ".join(f"{player.name} {share}" for player, share in zip(aboard, shares, strict=True))
        asks = [ask(game, round_, voter, str(texts.render("request1", number, plan, shares[voter.index - number + 1],
                                                            vote_format)),
                    RunnerAnswer(game="pirate_game", move="vote", labels=("accept", "reject"), cot=bool(game.params.cot)),
                    "vote", shares=listed)
                for voter in voters]
        votes = dict(zip(voters, await asyncio.gather(*asks), strict=True))
    responses = ["accept", *(votes[voter] for voter in voters)]
    accepted = responses.count("accept")
    passed = accepted / len(aboard) >= 0.5
    majority = texts.sentence("report_result", "majority", 0 if passed else 1, 2)
    counted = len(texts.runner.assigned("report_result", "count")) > 1  # an earlier runner counts the players told
    reports: dict[Player, list[str | list[str]]] = {}
    for position, player in enumerate(aboard):
        which = (0 if player == proposer else 1) if passed else (2 if player == proposer else 3)
        result = texts.sentence("report_result", "result", which, 4, gold_distribution=shares,
                                count=position if counted else 0,
                                **{"self.player_id_manipulation": hyphen_ordinal, "self.current_round": number})
        reports[player] = [texts.render("report", hyphen_ordinal(number), plan, accepted, len(aboard),
                                        "accept" if player == proposer else votes[player], majority, result)]
    tell(game, round_, reports)
    round_.record(gold_distribution=shares, responses=responses)
    if passed:
        for player, share in zip(aboard, shares, strict=True):
            round_.pay(player, share)
        round_.end("a plan passed")
    else:
        round_.eliminate(proposer, "thrown overboard")


PLAYS: dict[str, Play] = {"guessing_game": guessing, "bar_game": bar, "divide_dollar": divide_dollar,
                          "public_goods": public_goods, "diner_dilemma": diner_dilemma,
                          "sealed_bid_auction": sealed_bid_auction, "battle_royale": battle_royale,
                          "pirate_game": pirate_game}
