"""The dilemma's report section: cooperation per round (per experiment, each model apart in a
mixed population), and a table of cooperation and payoffs by experiment and model. Fallbacks
(moves no reply gave) are in no cooperation rate: the table counts them beside.

Registered with `python -m agentsim report` by the family (`report_sections` in __init__.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...analysis.recorded import RecordedExperiment
from ...analysis.report import ReportContext, register_section, whole_rounds

SCENARIO_NAME = "prisoners_dilemma"


def dilemma_experiments(experiments: list[RecordedExperiment]) -> list[RecordedExperiment]:
    return [experiment for experiment in experiments if experiment.scenario_name == SCENARIO_NAME and experiment.runs]


def cooperation_by_round(experiment: RecordedExperiment, model: str | None = None) -> list[list[float | None]]:
    """Runs x rounds cooperation rates (of one model's agents with `model`); None where a round
    had no choice."""
    matrix = []
    for entries in experiment.round_stats.values():
        row = []
        for entry in entries:
            tally = entry if model is None else (entry.get("by_model") or {}).get(model) or {}
            row.append(tally.get("cooperation_rate"))
        matrix.append(row)
    return matrix


def models_of(experiment: RecordedExperiment) -> list[str]:
    return sorted({label for summary in experiment.summaries() for label in summary.get("cooperation_by_model") or {}})


def summary_rows(experiment: RecordedExperiment) -> list[list[Any]]:
    """Per model (and `all`): runs, choices, cooperations, cooperation rate, mean payoff, fallbacks."""
    rows = []
    for model in [None, *models_of(experiment)]:
        choices = cooperations = moves = payoff = fallbacks = 0
        for entries in experiment.round_stats.values():
            for entry in entries:
                tally = entry if model is None else (entry.get("by_model") or {}).get(model) or {}
                choices += tally.get("choices", 0)
                cooperations += tally.get("cooperations", 0)
                moves += tally.get("moves", 0)
                fallbacks += tally.get("fallbacks", 0)
                payoff += (tally.get("mean_payoff") or 0) * tally.get("moves", 0)
        rows.append([experiment.label, model or "all", len(experiment.runs), choices, cooperations,
                     round(cooperations / choices, 4) if choices else None,
                     round(payoff / moves, 4) if moves else None, fallbacks])
    return rows


def _mean(matrix: list[list[float | None]]) -> np.ndarray:
    width = max((len(row) for row in matrix), default=0)
    values = np.full((len(matrix), width), np.nan)
    for index, row in enumerate(matrix):
        values[index, : len(row)] = [np.nan if value is None else value for value in row]
    if not values.size:
        return np.zeros(0)
    counts = np.sum(~np.isnan(values), axis=0)
    return np.where(counts > 0, np.nansum(values, axis=0) / np.maximum(counts, 1), np.nan)


@register_section("dilemma", "Repeated Prisoner's Dilemma with reputation", order=85,
                  applies=lambda context: bool(dilemma_experiments(context.experiments)))
def dilemma_section(context: ReportContext) -> None:
    experiments = dilemma_experiments(context.experiments)
    figure, axes = context.figure()
    axis = axes[0][0]
    rows: list[list[Any]] = []
    for number, experiment in enumerate(experiments):
        models = models_of(experiment)
        series = [(None, "all agents")] + ([(model, model) for model in models] if len(models) > 1 else [])
        for line, (model, label) in enumerate(series):
            mean = _mean(cooperation_by_round(experiment, model))
            rounds = np.arange(1, len(mean) + 1)
            axis.plot(rounds, mean, color=f"C{number}", lw=2 if model is None else 1,
                      ls=("-", "--", ":", "-.")[line % 4], label=f"{experiment.label}: {label} ({len(experiment.runs)} runs)")
            rows.extend([experiment.label, label, int(round_), None if np.isnan(value) else float(value)]
                        for round_, value in zip(rounds, mean))
    axis.set(xlabel="round", ylabel="cooperation rate (share of C among choices)", ylim=(0, 1.02))
    whole_rounds(axis)
    axis.legend(fontsize=7, loc="lower left")
    context.add_figure("dilemma_cooperation", "Cooperation per round", figure,
                       ["experiment", "agents", "round", "cooperation_rate"], rows,
                       "Mean over runs of each round's share of C among the players' choices; fallbacks (moves no "
                       "reply gave) are left out.")
    context.add_table("dilemma_summary", "Cooperation and payoffs by model",
                      ["experiment", "model", "runs", "choices", "cooperations", "cooperation_rate", "mean_payoff",
                       "fallbacks"], [row for experiment in experiments for row in summary_rows(experiment)],
                      "Over every round of every finished run; mean payoff per move (fallbacks included: they were "
                      "played), cooperation rate over choices only.")
