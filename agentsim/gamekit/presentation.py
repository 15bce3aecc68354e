"""What the layer measures and shows of a game, in one place: each round's line for the store
(`KitMetrics`), the run's summary, the live view's figures and a player's default feedback.
`KitReadout` is the game's readout (agentsim/parts.py: what the live view, Mesa and the runner
ask of a run), made by `Game.readout`.

A round's line (the store's `rounds` table; `Results.rounds()`; what the report and a game's
`score` read) is plain JSON:

    kit, game, round (from 1)
    groups      one per table: players, moves [[player, move, kind, action, fallback]] (in the
                order asked),
                payoffs [[player, amount]], eliminated [[player, why]], winners, data, ended
    data        what the tables recorded: one table's data, or by table number ("1", "2", ...)
    asked, choices, fallbacks: moves (a player asked twice in a round: two); players
                (player-rounds at the tables), payoff (all paid), chosen_payoff, chosen_players
                and mean_payoff: the payoff per player-round in which the player chose (every
                move it made a choice, not a fallback), the one mean payoff of the layer (the
                run summary's, the report's and the store's by-model table's)
    moves       per move name: choices, and the mean (a number), the shares (an option, a
                target) or the mean of each part (a split) over choices only
    by_model    the same per model (a mixed population): asked, choices, fallbacks, payoff,
                players, moves

A fallback (no reply gave it) plays its part (its payoffs) but is in no mean and no share.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .. import checkpoints
from ..figures import LiveFigures
from ..parts import Readout
from ..views import Views
from .guard import game_code
from .views import kit_series, kit_views, shown

if TYPE_CHECKING:
    from ..model import PopulationModel
    from .game import Game, KitState
    from .round import Player, Round


@dataclass(slots=True)
class KitMetrics:
    """Every table's result, by population round (plain data: checkpointed whole)."""

    game: str
    models: dict[int, str]
    rounds: list[list[dict[str, Any]]] = field(default_factory=list)
    recorded: int = 0

    def update(self, record: Any) -> None:
        """The round's groups arrive through `add` (they carry more than the record)."""

    def add(self, round_index: int, round_: Round) -> None:
        while len(self.rounds) <= round_index:
            self.rounds.append([])
        self.rounds[round_index].append({
            "players": [player.index for player in round_.players],
            "moves": [[asked.player.index, asked.ask.move, asked.ask.choice.kind, asked.action, asked.decision.fell_back]
                      for asked in round_.in_order()],  # in the order asked (a player asked twice: twice)
            "payoffs": [[index, amount] for index, amount in sorted(round_.payoffs.items())],
            "eliminated": [[index, why] for index, why in sorted(round_.eliminated.items())],
            "winners": list(round_.winners),
            "choices": {asked.ask.move: asked.ask.choice.spec() for asked in round_.in_order()},
            "data": dict(round_.data),
            "ended": round_.ended,
        })

    def pop_rounds(self, before: int) -> Iterator[tuple[int, RoundLine]]:
        while self.recorded < min(before, len(self.rounds)):
            yield self.recorded, RoundLine(self.line(self.recorded))
            self.recorded += 1

    def line(self, index: int) -> dict[str, Any]:
        groups = self.rounds[index]
        line: dict[str, Any] = {"kit": 1, "game": self.game, "round": index + 1, "groups": groups,
                                "data": round_data(groups)}
        line.update(_tally(groups, None))
        models = sorted({self.models.get(player, "?") for group in groups for player in group["players"]})
        line["by_model"] = {model: _tally(groups, lambda player, model=model: self.models.get(player, "?") == model)
                            for model in models}
        return line

    def lines(self) -> list[dict[str, Any]]:
        return [self.line(index) for index in range(len(self.rounds))]


def round_data(groups: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the round's tables `record`ed, where `Results.rounds()` spreads it into columns:
    one table's data as it is (`data.KEY`), several tables' by table, from 1 (`data.2.KEY`)."""
    if len(groups) == 1:
        return dict(groups[0]["data"])
    return {str(number): dict(group["data"]) for number, group in enumerate(groups, start=1)}


@dataclass(frozen=True, slots=True)
class RoundLine:
    stats: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return self.stats


checkpoints.register(KitMetrics)


def _tally(groups: Sequence[dict[str, Any]], keep: Any) -> dict[str, Any]:
    def kept(player: int) -> bool:
        return keep is None or keep(player)

    players = [player for group in groups for player in group["players"] if kept(player)]
    moves = [move for group in groups for move in group["moves"] if kept(move[0])]
    payoff = sum(amount for group in groups for player, amount in group["payoffs"] if kept(player))
    fallbacks = sum(1 for move in moves if move[4])
    # The mean payoff is over the player-rounds in which the player chose (every move it made
    # that round a choice: a move no reply gave is in no mean, as in the store's by-model
    # table): its payoff that round, per such player-round.
    chosen_payoff, chosen_players = 0.0, 0
    for group in groups:
        fell: dict[int, bool] = {}
        for move in group["moves"]:
            if kept(move[0]):
                fell[move[0]] = fell.get(move[0], False) or bool(move[4])
        paid = dict(group["payoffs"])
        for player, fallback in fell.items():
            if not fallback:
                chosen_payoff += paid.get(player, 0)
                chosen_players += 1
    by_move: dict[str, Any] = {}
    for name in sorted({move[1] for move in moves}):  # one order in every line and summary
        chosen = [move for move in moves if move[1] == name and not move[4]]
        by_move[name] = summarize(chosen[0][2] if chosen else "", [move[3] for move in chosen])
    return {"asked": len(moves), "choices": len(moves) - fallbacks, "fallbacks": fallbacks, "players": len(players),
            "payoff": payoff, "chosen_payoff": chosen_payoff, "chosen_players": chosen_players,
            "mean_payoff": chosen_payoff / chosen_players if chosen_players else None, "moves": by_move}


def summarize(kind: str, actions: Sequence[str]) -> dict[str, Any]:
    """Choices of one move: their number and mean (numbers), shares (options, targets) or
    each part's mean (splits)."""
    summary: dict[str, Any] = {"kind": kind, "choices": len(actions)}
    if not actions:
        return summary
    if kind == "number":
        values = [float(action) for action in actions]
        summary.update(mean=sum(values) / len(values), min=min(values), max=max(values))
    elif kind == "split":
        parts = [[float(part) for part in action.split(",")] for action in actions]
        width = min(len(each) for each in parts)
        summary["part_means"] = [sum(each[i] for each in parts) / len(parts) for i in range(width)]
        summary["mean"] = summary["part_means"][0]  # the first part: a proposer's own share
    else:
        counts = Counter(actions)
        summary["shares"] = {option: count / len(actions) for option, count in counts.most_common()}
    return summary


def metrics_of(model: PopulationModel) -> KitMetrics:
    return cast(KitMetrics, model.metrics)


def feedback(player: Player, round_: Round) -> str:
    """The default: `Round R:` the lines told, the player's own choices in order (a fallback told
    as played for it, not as its choice), its payoff (0 where the round paid it nothing: a player
    can tell it earned nothing), whether it left the game; nothing for a round the player sat out
    (asked, told and paid nothing)."""
    index = player.index
    told = list(round_.told.get(index, []))
    mine = [asked for asked in round_.in_order() if asked.player.index == index]
    if not (told or mine or index in round_.payoffs or index in round_.eliminated):
        return ""  # a round it sat out: no line saying so in every later prompt
    parts = told
    chosen = [asked.ask.choice.reply(asked.value).rstrip(".") for asked in mine if not asked.decision.fell_back]
    played = [asked.ask.choice.reply(asked.value).rstrip(".") for asked in mine if asked.decision.fell_back]
    if chosen:
        parts.append(f"You chose {', then '.join(chosen)}.")
    if played:  # a fallback is no choice of the player's: it is told what was played for it
        parts.append(f"No reply of yours could be read, so {', then '.join(played)} was played for you.")
    parts.append(f"Your payoff: {_number(round_.payoffs.get(index, 0))}.")  # 0 where the round paid it nothing
    if index in round_.eliminated:
        parts.append(f"You are out of the game ({round_.eliminated[index]}).")
    return f"Round {round_.number}: " + " ".join(parts)


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def run_summary(game: Game[Any], model: PopulationModel[KitState]) -> dict[str, Any]:
    """What summary.json and the store keep per run: rounds, mean payoffs and choices (all and
    by model), fallbacks, eliminations, the game's end and its own score."""
    lines = metrics_of(model).lines()
    total = _tally([group for line in lines for group in line["groups"]], None)
    models = sorted(set(metrics_of(model).models.values()))
    by_model = {label: _tally([group for line in lines for group in line["groups"]],
                              lambda player, label=label: metrics_of(model).models.get(player) == label)
                for label in models}
    return {
        "game": game.name,
        "rounds": len(lines),
        "mean_payoff": total["mean_payoff"],
        "mean_payoff_by_model": {label: entry["mean_payoff"] for label, entry in by_model.items()},
        "mean_choice": {move: entry.get("mean") for move, entry in total["moves"].items()},
        "mean_choice_by_model": {label: {move: each.get("mean") for move, each in entry["moves"].items()}
                                 for label, entry in by_model.items()},
        "fallback_moves": total["fallbacks"],
        "eliminated": len(model.state.out) if model.state is not None else 0,
        "ended": model.state.ended if model.state is not None else None,
        "score": _score(game, lines),
    }


def _score(game: Game[Any], lines: list[dict[str, Any]]) -> float | None:
    with game_code(game, "in its score hook"):
        return game.score(lines)


def live_figures(model: PopulationModel[KitState]) -> LiveFigures:
    metrics = metrics_of(model)
    if not metrics.rounds:
        return LiveFigures()
    line = metrics.line(len(metrics.rounds) - 1)
    # Every figure here is the latest round's (the run's own totals are in its summary), and says so.
    latest = f"in round {line['round']}"
    rows: list[tuple[str, str]] = []  # (labels other than the log's own fields: run, round, fallbacks, ...)
    shares: dict[str, float] = {}
    for move, entry in line["moves"].items():
        if "shares" in entry and not shares:
            shares = dict(entry["shares"])
            label = move
        if "mean" in entry:
            rows.append((f"mean {shown(move)}", f"{entry['mean']:.2f} {latest}"))
    if line["mean_payoff"] is not None:
        rows.append(("mean payoff", f"{line['mean_payoff']:.2f} per player-round {latest}"))
    if len(line["by_model"]) > 1:
        for model_label, entry in line["by_model"].items():
            means = ", ".join(f"{shown(move)} {each['mean']:.2f}" for move, each in entry["moves"].items() if "mean" in each)
            rows.append((model_label, f"{means or str(entry['choices']) + ' choices'} {latest}"))
    out = len(model.state.out) if model.state is not None else 0
    if out:
        rows.append(("eliminated", str(out)))
    note = (f"{line['fallbacks']} fallback(s) left out {latest}" if line["fallbacks"] else
            f"every move a choice {latest}")
    if shares:
        return LiveFigures(shares=shares, shares_label=label, shares_note=note, lines=tuple(rows))
    return LiveFigures(lines=(*rows, ("choices", note)))


class KitReadout(Readout["KitState"]):
    """A layer game's readout: `run_summary` and `live_figures` above, for `game`."""

    def __init__(self, game: Game[Any]) -> None:
        self.game = game

    def run_summary(self, model: PopulationModel[KitState]) -> dict[str, Any]:
        return run_summary(self.game, model)

    def live_figures(self, model: PopulationModel[KitState]) -> LiveFigures:
        return live_figures(model)

    def views(self, model: PopulationModel[KitState], rounds: Mapping[int, Mapping[str, Any]]) -> Views:
        """Each move's choices per round within its bounds, the payoffs, the score as it accrues
        (gamekit/views.py), from the store's round lines."""
        state = model.state
        return kit_views([line for _, line in sorted(rounds.items())], done=model.rounds_done,
                         total=self.game.params.max_rounds, score=self.game.score,
                         eliminated=len(state.out) if state is not None else 0,
                         ended=state.ended if state is not None else None)

    def model_series(self, model: PopulationModel[KitState]) -> dict[str, float | str | None]:
        """Mesa's columns: each declared move's mean choice (`Game.moves`; else the first
        move's), the mean payoff and fallbacks of the latest round, the game's score so far
        (gamekit/views.py)."""
        return kit_series(metrics_of(model).lines(), self.game.score, type(self.game).moves)
