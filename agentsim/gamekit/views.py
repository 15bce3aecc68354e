"""What the page draws of a game on the layer and what Mesa's DataCollector records of it, from
its round lines alone (presentation.py: each table's moves, payoffs and the choice each move
asked for), so a run read back from the store shows the same as the run that wrote it.

For each move the game asks (in the order it first asked them): a number's choices per round
(each choice a dot, the mean a line, the lowest to highest a band) between the choice's own
bounds; an option's (or a target's) share of the round's choices. Then the payoff per round and
the game's own score as it accrues (its `score` over the rounds so far), where it has one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..views import Chart, Series, Stat, Views, shares_chart

Line = Mapping[str, Any]
NAN = float("nan")
MAX_SCORED = 120  # the score as it accrues is computed after at most this many rounds (evenly spread)


def shown(move: str) -> str:
    """A move's name as figures show it: the default move, "choose", as "choice"."""
    return "choice" if move == "choose" else move


def moves_in(lines: Sequence[Line]) -> dict[str, dict[str, Any]]:
    """Each move's name and the choice it asked for (its spec: kind, bounds), in the order the
    game first asked it (a line recorded before specs were kept gives the kind only)."""
    found: dict[str, dict[str, Any]] = {}
    for line in lines:
        for group in line.get("groups") or ():
            specs = group.get("choices") or {}
            for move in group.get("moves") or ():
                name, kind = str(move[1]), str(move[2])
                if name not in found or (name in specs and "low" not in found[name] and "total" not in found[name]):
                    found[name] = dict(specs.get(name) or {"kind": kind})
    return found


def choices_of(line: Line, move: str) -> list[str]:
    """The round's choices of `move` (fallbacks left out), as recorded."""
    return [str(entry[3]) for group in line.get("groups") or () for entry in group.get("moves") or ()
            if str(entry[1]) == move and not entry[4] and entry[3] is not None]


def number(text: str) -> float | None:
    try:
        return float(text.split(",")[0])
    except ValueError:
        return None


def move_chart(lines: Sequence[Line], move: str, spec: Mapping[str, Any]) -> Chart:
    kind = str(spec.get("kind") or "")
    label = shown(move)
    if kind in ("number", "split"):
        dots, points, band = [], [], []
        for line in lines:
            x = float(line["round"])
            values = [value for value in map(number, choices_of(line, move)) if value is not None]
            dots += [(x, value) for value in values]
            if values:
                points.append((x, sum(values) / len(values)))
                band.append((x, min(values), max(values)))
        low = spec.get("low", 0 if kind == "split" else None)
        high = spec.get("high", spec.get("total"))
        bounds = f"from {low:g} to {high:g}" if isinstance(low, (int, float)) and isinstance(high, (int, float)) else ""
        what = "the first part (the proposer's own)" if kind == "split" else label
        return Chart(key=f"move:{move}", title=f"{label} per round" + (f" ({bounds})" if bounds else ""),
                     y_label=what, y_min=None if low is None else float(low), y_max=None if high is None else float(high),
                     across="mean", series=(Series(name=f"mean {label}", points=tuple(points), band=tuple(band),
                                                   dots=tuple(dots)),),
                     note="each choice a dot, the mean a line, lowest to highest shaded; fallbacks left out")
    per_round = []
    for line in lines:
        counts: dict[str, int] = {}
        for choice in choices_of(line, move):
            counts[choice] = counts.get(choice, 0) + 1
        per_round.append((float(line["round"]), counts))
    options = [str(option) for option in spec.get("labels") or ()]
    return shares_chart(per_round, options, key=f"move:{move}", title=f"{label}: each option's share of the round's choices")


def accrued_scores(lines: Sequence[Line], score: Callable[[Sequence[Line]], float | None]) -> tuple[tuple[float, float], ...]:
    """The game's score of the rounds up to each round (at most MAX_SCORED of them)."""
    if not lines:
        return ()
    count = len(lines)
    ends = (range(1, count + 1) if count <= MAX_SCORED else
            sorted({max(1, round(count * (index + 1) / MAX_SCORED)) for index in range(MAX_SCORED)}))
    points = []
    for end in ends:
        try:
            value = score(list(lines[:end]))
        except Exception:  # a score that needs the whole game (a last round's verdict) has none before
            value = None
        if isinstance(value, (int, float)):
            points.append((float(lines[end - 1]["round"]), float(value)))
    return tuple(points)


def kit_views(lines: Sequence[Line], *, done: int, total: int | None, score: Callable[[Sequence[Line]], float | None],
              eliminated: int, ended: str | None) -> Views:
    """The page's views of a layer game from its round lines (round order)."""
    charts = [move_chart(lines, move, spec) for move, spec in moves_in(lines).items()]
    payoffs = Series(name="mean payoff", points=tuple((float(line["round"]), float(line["mean_payoff"])) for line in lines
                                                      if isinstance(line.get("mean_payoff"), (int, float))),
                     band=tuple(band for line in lines if (band := _payoff_band(line)) is not None))
    charts.append(Chart(key="payoff", title="payoff per round", y_label="payoff", series=(payoffs,), across="mean",
                        note="the mean over the players who chose (fallbacks left out); lowest to highest shaded"))
    scores = accrued_scores(lines, score)
    stats = []
    if scores:
        charts.append(Chart(key="score", title="the game's score as it accrues", y_label="score", across="mean",
                            y_min=0 if all(0 <= y <= 100 for _, y in scores) else None,
                            y_max=100 if all(0 <= y <= 100 for _, y in scores) else None,
                            series=(Series(name="score", points=scores),), note="its score over the rounds so far"))
        stats.append(Stat(label="score", value=scores[-1][1], text=f"{scores[-1][1]:.1f}"))
    chosen = [line for line in lines if isinstance(line.get("mean_payoff"), (int, float))]
    if chosen:
        weights = sum(int(line.get("choices") or 0) for line in chosen)
        mean = sum(float(line["chosen_payoff"]) for line in chosen) / weights if weights else None
        stats.append(Stat(label="mean payoff", value=mean, text="–" if mean is None else f"{mean:.2f} per choice"))
    stats.append(Stat(label="fallbacks", value=float(sum(int(line.get("fallbacks") or 0) for line in lines)),
                      text=str(sum(int(line.get("fallbacks") or 0) for line in lines))))
    if eliminated:
        stats.append(Stat(label="eliminated", value=float(eliminated), text=str(eliminated)))
    return Views(unit="round", done=float(done), total=None if not total else float(total), charts=tuple(charts),
                 stats=tuple(stats), state=f"ended: {ended}" if ended else "")


def _payoff_band(line: Line) -> tuple[float, float, float] | None:
    amounts = [float(amount) for group in line.get("groups") or () for _player, amount in group.get("payoffs") or ()]
    return (float(line["round"]), min(amounts), max(amounts)) if amounts else None


def kit_series(lines: Sequence[Line], score: Callable[[Sequence[Line]], float | None],
               declared: Sequence[str] = ()) -> dict[str, float | str | None]:
    """Mesa's columns of a layer game, one row per round: the mean choice of each move in the
    latest round (a number's mean, a split's first part; NaN for options and for a move not
    asked that round) as `mean_choice.MOVE` for each move the game declares (`Game.moves`: the
    columns are fixed before its first round), as `mean_choice` for a game of one move (the
    first it asks); the latest round's mean payoff per player-round chosen, its fallbacks, and
    the game's score over the rounds so far (NaN where there is none yet: a column keeps its
    float dtype)."""
    latest = lines[-1] if lines else {}
    moves = moves_in(lines)
    columns = ({f"mean_choice.{move}": move for move in declared} if len(declared) > 1 else
               {"mean_choice": declared[0] if declared else next(iter(moves), None)})
    try:
        scored = score(list(lines)) if lines else None
    except Exception:
        scored = None
    return {**{column: _mean_choice(latest, move, moves) for column, move in columns.items()},
            "mean_payoff": float(latest["mean_payoff"]) if isinstance(latest.get("mean_payoff"), (int, float)) else NAN,
            "fallbacks": float(latest.get("fallbacks") or 0) if lines else NAN,
            "score": float(scored) if isinstance(scored, (int, float)) else NAN}


def _mean_choice(line: Line, move: str | None, moves: Mapping[str, Mapping[str, Any]]) -> float:
    """The mean of `move`'s choices in `line` where they are numbers (a split's first part)."""
    if move is None or (moves.get(move) or {}).get("kind") not in ("number", "split"):
        return NAN
    values = [value for value in map(number, choices_of(line, move)) if value is not None]
    return sum(values) / len(values) if values else NAN
