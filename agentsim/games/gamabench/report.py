"""GAMA-Bench's report section: the score table (model, game, version, condition, runs, score)
over every GAMA-Bench experiment under the report's directory, imported or run here, and each
game's round statistic (the mean guess, the share who went to the bar, ...) per round.

Registered with `python -m agentsim report` by the family (`report_sections` in __init__.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...analysis.report import ReportContext, register_section, whole_rounds
from .scores import COLUMNS, gamabench_experiments, round_record, run_scores, score_table
from .scoring import base_game

MAX_LINES = 12  # experiments drawn in the per-round figure; the table holds them all

# What each game's per-round figure shows, from its round record and parameters.
ROUND_STATISTIC: dict[str, tuple[str, Callable[[Mapping[str, Any], Mapping[str, Any]], float]]] = {
    "guessing_game": ("mean number chosen", lambda record, params: float(record["mean"])),
    "bar_game": ("share who went", lambda record, params: float(record["go_ratio"])),
    "divide_dollar": ("total asked", lambda record, params: float(record["total_proposal"])),
    "public_goods": ("mean contribution", lambda record, params: record["total_tokens"] / params["player_num"]),
    "diner_dilemma": ("share of cheap orders", lambda record, params: record["cheap_player"] / params["player_num"]),
    "sealed_bid_auction": ("mean bid / value", lambda record, params: float(np.mean(
        [bid / (value or 1) for bid, value in zip(record["responses"], record["valuations"], strict=True)]))),
    "battle_royale": ("players left", lambda record, params: float(len(record.get("initial_players") or []))),
    "pirate_game": ("proposer's share", lambda record, params: float(record["gold_distribution"][0])),
}


@register_section("gamabench", "GAMA-Bench games and scores", order=88,
                  applies=lambda context: bool(gamabench_experiments(context.experiments)))
def gamabench_section(context: ReportContext) -> None:
    experiments = gamabench_experiments(context.experiments)
    scores = [entry for experiment in experiments for entry in run_scores(experiment)]
    rows = score_table(scores)
    context.add_table("gamabench_scores", "GAMA-Bench score by model, game and prompt version", list(COLUMNS),
                      [[row[column] for column in COLUMNS] for row in rows],
                      "GAMA-Bench's 0-100 score (arXiv:2403.11807, as revised in 2024), the mean over runs; std is "
                      "over runs. Imported runs are marked as such in their experiment (`imported`).")
    drawn = experiments[:MAX_LINES]
    games = sorted({base_game(experiment.scenario_name.removeprefix("gamabench_")) for experiment in drawn})
    figure, axes = context.panels(len(games))
    data: list[list[Any]] = []
    for axis, game in zip(axes, games, strict=True):
        label, statistic = ROUND_STATISTIC[game]
        for experiment in drawn:
            if not experiment.scenario_name.endswith(game):
                continue
            params = experiment.params
            params.setdefault("player_num", params.get("agents", 10))
            series = [[statistic(round_record(entry), params) for entry in entries]
                      for entries in experiment.round_stats.values()]
            width = max(len(row) for row in series)
            matrix = np.full((len(series), width), np.nan)
            for index, row in enumerate(series):
                matrix[index, :len(row)] = row
            means = np.nanmean(matrix, axis=0)
            rounds = np.arange(1, width + 1)
            axis.plot(rounds, means, marker=".", label=f"{experiment.label} ({len(series)} runs)")
            data.extend([game, experiment.label, int(round_), float(value)] for round_, value in zip(rounds, means))
        axis.set(title=game.replace("_", " "), xlabel="round", ylabel=label)
        whole_rounds(axis)
        axis.legend(fontsize=6)
    context.add_figure("gamabench_rounds", "GAMA-Bench games round by round", figure,
                       ["game", "experiment", "round", "value"], data,
                       f"Each game's round statistic, the mean over runs (the first {MAX_LINES} experiments).")
