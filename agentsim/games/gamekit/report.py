"""The report section of every layer game, read from the recorded round lines alone (no game
code runs): per game, each move's mean choice per round (or, for options and targets, each
option's share per round), all players and each model of a mixed population, the mean payoff
per round; and tables of choices and payoffs by model, and of each run's score and end.
Fallbacks are in no mean and no share (the tables count them beside).

Registered with `python -m agentsim report` by the family (this package's __init__).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from ...analysis.recorded import RecordedExperiment
from ...analysis.report import ReportContext, register_section, whole_rounds
from ...gamekit.presentation import shown


def kit_experiments(experiments: list[RecordedExperiment]) -> list[RecordedExperiment]:
    """The experiments whose round lines say they are a layer game's."""
    return [experiment for experiment in experiments
            if experiment.runs and any(entries and entries[0].get("kit") for entries in experiment.round_stats.values())]


def series(experiment: RecordedExperiment, model: str | None = None) -> dict[tuple[str, str], tuple[list[float], list[int]]]:
    """(move, what) -> per round, the mean over runs and the choices it rests on (summed over
    runs) of: a move's mean choice (`mean`), an option's share (`share:OPTION`), and the mean
    payoff (`payoff`, over the player-rounds in which the player chose), for all players or
    one model's."""
    per_round: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    counts: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for entries in experiment.round_stats.values():
        for index, line in enumerate(entries):
            tally = line if model is None else (line.get("by_model") or {}).get(model) or {}
            if tally.get("mean_payoff") is not None:
                per_round["", "payoff"][index].append(float(tally["mean_payoff"]))
                counts["", "payoff"][index] += int(tally.get("choices", 0))
            for move, entry in (tally.get("moves") or {}).items():
                if entry.get("mean") is not None:
                    per_round[move, "mean"][index].append(float(entry["mean"]))
                    counts[move, "mean"][index] += int(entry.get("choices", 0))
                for option, share in (entry.get("shares") or {}).items():
                    per_round[move, f"share:{option}"][index].append(float(share))
                    counts[move, f"share:{option}"][index] += int(entry.get("choices", 0))
    width = max((len(entries) for entries in experiment.round_stats.values()), default=0)
    return {key: ([float(np.mean(values[i])) if values.get(i) else float("nan") for i in range(width)],
                  [counts[key].get(i, 0) for i in range(width)])
            for key, values in per_round.items()}


def models_of(experiment: RecordedExperiment) -> list[str]:
    return sorted({model for entries in experiment.round_stats.values() for line in entries
                   for model in line.get("by_model") or {}})


def summary_rows(experiment: RecordedExperiment) -> list[list[Any]]:
    """Per model (and all): runs, moves asked, choices, fallbacks, mean payoff per player-round
    in which the player chose, and each move's mean choice."""
    rows = []
    for model in [None, *models_of(experiment)]:
        asked = choices = fallbacks = chose = 0
        payoff = 0.0
        means: dict[str, list[float]] = defaultdict(list)
        for entries in experiment.round_stats.values():
            for line in entries:
                tally = line if model is None else (line.get("by_model") or {}).get(model) or {}
                asked += tally.get("asked", 0)
                choices += tally.get("choices", 0)
                fallbacks += tally.get("fallbacks", 0)
                payoff += tally.get("chosen_payoff", 0) or 0
                chose += tally.get("chosen_players", tally.get("choices", 0))  # (lines before it: a move per player-round)
                for move, entry in (tally.get("moves") or {}).items():
                    if entry.get("mean") is not None:
                        means[move].extend([float(entry["mean"])] * int(entry.get("choices", 0)))
        shown = "; ".join(f"{move} {np.mean(values):.3g}" for move, values in means.items() if values)
        rows.append([experiment.label, model or "all", len(experiment.runs), asked, choices, fallbacks,
                     round(payoff / chose, 4) if chose else None, shown])
    return rows


def choice_rows(experiment: RecordedExperiment) -> list[list[Any]]:
    """Per model (and all) and move: how often each choice was made (choices only, fallbacks
    left out), and its share of the move's choices: a game of several moves (a gift, then a
    punishment) keeps each move's choices apart."""
    counted: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for run in experiment.runs:
        models = agent_models(experiment, run["run"])
        for line in experiment.round_stats.get(run["run"], []):
            for group in line.get("groups") or []:
                for player, move, _kind, action, fallback in group.get("moves") or []:
                    if fallback:
                        continue
                    counted["all", move][action] += 1
                    if len(models_of(experiment)) > 1:
                        counted[models.get(player, "?"), move][action] += 1
    rows = []
    for (model, move), counts in sorted(counted.items(), key=lambda item: (item[0][0] != "all", item[0])):
        total = sum(counts.values())
        for action, count in sorted(counts.items(), key=lambda item: _choice_order(item[0])):
            rows.append([experiment.label, model, move, action, count, round(count / total, 4)])
    return rows


def _choice_order(action: str) -> tuple[int, float, str]:
    try:
        return 0, float(action), action
    except ValueError:
        return 1, 0.0, action


def agent_models(experiment: RecordedExperiment, run: int) -> dict[int, str]:
    return {int(agent): str(model) for agent, model in experiment.store.rows(
        "SELECT agent, model FROM agents WHERE run = ?", (run,))}


def player_rows(experiment: RecordedExperiment) -> list[list[Any]]:
    """Per run and player: its model, the rounds it played, its choices and fallbacks, its
    total payoff, the rounds it won, and the round it left the game in (and why): who
    survived and who won an elimination game, and with which model."""
    rows = []
    for run in experiment.runs:
        models = agent_models(experiment, run["run"])
        played: Counter[int] = Counter()
        chose: Counter[int] = Counter()
        fell: Counter[int] = Counter()
        paid: dict[int, float] = defaultdict(float)
        won: Counter[int] = Counter()
        out: dict[int, tuple[int, str]] = {}
        for line in experiment.round_stats.get(run["run"], []):
            for group in line.get("groups") or []:
                played.update(group.get("players") or [])
                for player, _move, _kind, _action, fallback in group.get("moves") or []:
                    (fell if fallback else chose)[player] += 1
                for player, amount in group.get("payoffs") or []:
                    paid[player] += amount
                won.update(group.get("winners") or [])
                for player, why in group.get("eliminated") or []:
                    out[player] = (int(line.get("round", 0)), str(why))
        for player in sorted(models):
            left = out.get(player)
            rows.append([experiment.label, run["run"], player, models[player], played[player],
                         chose[player], fell[player], round(paid[player], 4), won[player],
                         left[0] if left else None, left[1] if left else None])
    return rows


def file_name(experiments: list[RecordedExperiment], number: int) -> str:
    """`gamekit_GAME` (the game's name), numbered where several experiments play one game."""
    game = "".join(char if char.isalnum() or char in "-_" else "_" for char in experiments[number].scenario_name) or "game"
    same = [index for index, each in enumerate(experiments) if each.scenario_name == experiments[number].scenario_name]
    return f"gamekit_{game}" if len(same) == 1 else f"gamekit_{game}_{same.index(number) + 1}"


FEW = 5  # a point resting on fewer choices than this is drawn hollow


@register_section("gamekit", "Games on the game layer", order=86,
                  applies=lambda context: bool(kit_experiments(context.experiments)))
def gamekit_section(context: ReportContext) -> None:
    experiments = kit_experiments(context.experiments)
    for number, experiment in enumerate(experiments):
        name, game = file_name(experiments, number), experiment.scenario_name
        models = models_of(experiment)
        every = series(experiment)
        panels = sorted({move for move, what in every if move})
        figure, axes = context.panels(len(panels) + 1)
        rows: list[list[Any]] = []
        for axis, move in zip(axes, [*panels, ""], strict=False):
            for line_number, model in enumerate([None, *(models if len(models) > 1 else [])]):
                drawn = series(experiment, model) if model is not None else every
                for (key_move, what), (values, counts) in sorted(drawn.items()):
                    if key_move != move or (move and what == "payoff"):
                        continue
                    label = (what.removeprefix("share:") if what.startswith("share:") else
                             "mean payoff" if what == "payoff" else f"mean {shown(move)}") + (f" ({model})" if model else "")
                    rounds = np.arange(1, len(values) + 1)
                    (drawn_line,) = axis.plot(rounds, values, lw=2 if model is None else 1,
                                              ls=("-", "--", ":", "-.")[line_number % 4], label=label)
                    few = [i for i, count in enumerate(counts) if 0 < count < FEW]
                    if few:  # resting on few choices: hollow markers say so
                        axis.plot(rounds[few], np.asarray(values)[few], ls="none", marker="o", mfc="none",
                                  color=drawn_line.get_color())
                    rows.extend([experiment.label, model or "all", move or "payoff", what, int(r),
                                 None if np.isnan(v) else v, n]
                                for r, v, n in zip(rounds, values, counts, strict=True))
            axis.set(xlabel="round", ylabel=("share of choices" if any(what.startswith("share:") for m, what in every if m == move)
                                             else f"mean {shown(move)}" if move else "mean payoff per player-round"),
                     title=f"{game}: {shown(move)}" if move else f"{game}: payoff")
            whole_rounds(axis)
            axis.legend(fontsize=7)
        context.add_figure(f"{name}_rounds", f"{game}: choices and payoffs per round ({experiment.label})",
                           figure, ["experiment", "model", "move", "measure", "round", "value", "n"], rows,
                           f"Mean over {len(experiment.runs)} run(s) of each round's mean choice (numbers; a split's "
                           "first part), each option's share (options, targets) and the mean payoff per player-round "
                           "in which the player chose; fallbacks (moves no reply gave) are left out of every mean and "
                           f"share. n: the choices a point rests on (over all runs); a hollow marker: fewer than {FEW}.")
        context.add_table(f"{name}_by_model", f"{game}: choices and payoffs by model",
                          ["experiment", "model", "runs", "asked", "choices", "fallbacks", "mean_payoff", "mean_choice"],
                          summary_rows(experiment),
                          "Over every round of every finished run; the mean payoff per player-round in which the "
                          "player chose, and the mean choices, over choices only: fallbacks (moves no reply gave) "
                          "are counted and left out of both, as in the by-model table and the runs' summaries.")
        context.add_table(f"{name}_choices", f"{game}: each move's choices",
                          ["experiment", "model", "move", "choice", "count", "share"], choice_rows(experiment),
                          "How often each choice was made, per move (each ask's name: a game of several moves keeps "
                          "them apart) and model; choices only, fallbacks left out.")
        context.add_table(f"{name}_players", f"{game}: each player's game",
                          ["experiment", "run", "agent", "model", "rounds_played", "choices", "fallbacks",
                           "payoff", "wins", "left_in_round", "why"], player_rows(experiment),
                          "Per run and player (agent, from 0: Player 1 is agent 0 unless the game names its players): "
                          "the rounds it played, its total "
                          "payoff, the rounds it won, and the round it was eliminated in (empty: it stayed to the end).")
        context.add_table(f"{name}_runs", f"{game}: each run's score and end",
                          ["experiment", "run", "rounds", "score", "ended", "eliminated", "mean_payoff", "fallback_moves"],
                          [[experiment.label, run["run"], run["summary"].get("rounds"), run["summary"].get("score"),
                            run["summary"].get("ended") or run.get("stop_reason"), run["summary"].get("eliminated"),
                            run["summary"].get("mean_payoff"), run["summary"].get("fallback_moves")]
                           for run in experiment.runs],
                          "The game's own score (its `score` hook, None where it has none) as the run recorded it.")
