"""The report section of every layer game, read from the recorded round lines alone (no game
code runs): per game, each move's mean choice per round (or, for options and targets, each
option's share per round), all players and each model of a mixed population, the mean payoff
per round; and tables of choices and payoffs by model, and of each run's score and end.
Fallbacks are in no mean and no share (the tables count them beside).

Registered with `python -m agentsim report` by the family (this package's __init__).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ...analysis.recorded import RecordedExperiment
from ...analysis.report import ReportContext, register_section, whole_rounds
from ...gamekit.presentation import shown


def kit_experiments(experiments: list[RecordedExperiment]) -> list[RecordedExperiment]:
    """The experiments whose round lines say they are a layer game's."""
    return [experiment for experiment in experiments
            if experiment.runs and any(entries and entries[0].get("kit") for entries in experiment.round_stats.values())]


def series(experiment: RecordedExperiment, model: str | None = None) -> dict[tuple[str, str], list[float]]:
    """(move, what) -> the mean over runs per round of: a move's mean choice (`mean`), an
    option's share (`share:OPTION`), and the mean payoff (`payoff`), for all players or one model's."""
    per_round: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for entries in experiment.round_stats.values():
        for index, line in enumerate(entries):
            tally = line if model is None else (line.get("by_model") or {}).get(model) or {}
            if tally.get("mean_payoff") is not None:
                per_round["", "payoff"][index].append(float(tally["mean_payoff"]))
            for move, entry in (tally.get("moves") or {}).items():
                if entry.get("mean") is not None:
                    per_round[move, "mean"][index].append(float(entry["mean"]))
                for option, share in (entry.get("shares") or {}).items():
                    per_round[move, f"share:{option}"][index].append(float(share))
    width = max((len(entries) for entries in experiment.round_stats.values()), default=0)
    return {key: [float(np.mean(values[i])) if values.get(i) else float("nan") for i in range(width)]
            for key, values in per_round.items()}


def models_of(experiment: RecordedExperiment) -> list[str]:
    return sorted({model for entries in experiment.round_stats.values() for line in entries
                   for model in line.get("by_model") or {}})


def summary_rows(experiment: RecordedExperiment) -> list[list[Any]]:
    """Per model (and all): runs, moves asked, choices, fallbacks, mean payoff per player and
    round, and each move's mean choice."""
    rows = []
    for model in [None, *models_of(experiment)]:
        asked = choices = fallbacks = players = 0
        payoff = 0.0
        means: dict[str, list[float]] = defaultdict(list)
        for entries in experiment.round_stats.values():
            for line in entries:
                tally = line if model is None else (line.get("by_model") or {}).get(model) or {}
                asked += tally.get("asked", 0)
                choices += tally.get("choices", 0)
                fallbacks += tally.get("fallbacks", 0)
                players += tally.get("players", 0)
                payoff += tally.get("payoff", 0) or 0
                for move, entry in (tally.get("moves") or {}).items():
                    if entry.get("mean") is not None:
                        means[move].extend([float(entry["mean"])] * int(entry.get("choices", 0)))
        shown = "; ".join(f"{move} {np.mean(values):.3g}" for move, values in means.items() if values)
        rows.append([experiment.label, model or "all", len(experiment.runs), asked, choices, fallbacks,
                     round(payoff / players, 4) if players else None, shown])
    return rows


@register_section("gamekit", "Games on the game layer", order=86,
                  applies=lambda context: bool(kit_experiments(context.experiments)))
def gamekit_section(context: ReportContext) -> None:
    experiments = kit_experiments(context.experiments)
    for number, experiment in enumerate(experiments):
        name = f"gamekit_{number + 1}"
        models = models_of(experiment)
        every = series(experiment)
        panels = sorted({move for move, what in every if move})
        figure, axes = context.panels(len(panels) + 1)
        rows: list[list[Any]] = []
        for axis, move in zip(axes, [*panels, ""], strict=False):
            for line_number, model in enumerate([None, *(models if len(models) > 1 else [])]):
                drawn = series(experiment, model) if model is not None else every
                for (key_move, what), values in sorted(drawn.items()):
                    if key_move != move or (move and what == "payoff"):
                        continue
                    label = (what.removeprefix("share:") if what.startswith("share:") else
                             "mean payoff" if what == "payoff" else f"mean {shown(move)}") + (f" ({model})" if model else "")
                    rounds = np.arange(1, len(values) + 1)
                    axis.plot(rounds, values, lw=2 if model is None else 1, ls=("-", "--", ":", "-.")[line_number % 4],
                              label=label)
                    rows.extend([experiment.label, model or "all", move or "payoff", what, int(r), None if np.isnan(v) else v]
                                for r, v in zip(rounds, values, strict=True))
            axis.set(xlabel="round", ylabel=("share of choices" if any(what.startswith("share:") for m, what in every if m == move)
                                             else f"mean {shown(move)}" if move else "mean payoff per player"),
                     title=shown(move) if move else "payoff")
            whole_rounds(axis)
            axis.legend(fontsize=7)
        context.add_figure(f"{name}_rounds", f"{experiment.scenario_name}: choices and payoffs per round ({experiment.label})",
                           figure, ["experiment", "model", "move", "measure", "round", "value"], rows,
                           f"Mean over {len(experiment.runs)} run(s) of each round's mean choice (numbers; a split's "
                           "first part), each option's share (options, targets) and the mean payoff per player; "
                           "fallbacks (moves no reply gave) are left out of every mean and share.")
        context.add_table(f"{name}_by_model", f"{experiment.scenario_name}: choices and payoffs by model",
                          ["experiment", "model", "runs", "asked", "choices", "fallbacks", "mean_payoff", "mean_choice"],
                          summary_rows(experiment),
                          "Over every round of every finished run; mean payoff per player and round (fallbacks "
                          "included: they were played), mean choices over choices only.")
        context.add_table(f"{name}_runs", f"{experiment.scenario_name}: each run's score and end",
                          ["experiment", "run", "rounds", "score", "ended", "eliminated", "mean_payoff", "fallback_moves"],
                          [[experiment.label, run["run"], run["summary"].get("rounds"), run["summary"].get("score"),
                            run["summary"].get("ended") or run.get("stop_reason"), run["summary"].get("eliminated"),
                            run["summary"].get("mean_payoff"), run["summary"].get("fallback_moves")]
                           for run in experiment.runs],
                          "The game's own score (its `score` hook, None where it has none) as the run recorded it.")
