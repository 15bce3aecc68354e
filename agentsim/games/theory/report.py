"""The report section of the theory baselines run as rule agents (scenarios/theory_*.py).

For each recorded minimal naming game without a committed minority: the success rate per
population round of the runs in the store against the fast path's (`success_curve`, 2,000
runs) at the same N and pool, the check that the scheduler runs the model the literature
describes; and a table of convergence time and peak inventory per experiment. Committed
minorities (Xie et al., Centola et al.) are drawn by the critical-mass section like LLM runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...analysis.report import ReportContext, register_section
from .minimal import success_curve

MINIMAL = "minimal_naming_game"
FAST_RUNS = 2_000


def _free_minimal(context: ReportContext) -> list[Any]:
    return [experiment for experiment in context.experiments
            if experiment.scenario_name == MINIMAL and experiment.runs and experiment.round_stats
            and not experiment.params.get("committed") and not experiment.params.get("committed_fraction")]


def scheduler_success(experiment: Any) -> np.ndarray:
    """Runs × rounds success rate; after a run reached global consensus every later meeting
    would succeed, so its remaining rounds count as 1."""
    rows = [[entry.get("success_rate") for entry in entries] for entries in experiment.round_stats.values()]
    width = max(len(row) for row in rows)
    matrix = np.ones((len(rows), width))
    for index, row in enumerate(rows):
        matrix[index, : len(row)] = [np.nan if value is None else value for value in row]
    return matrix


@register_section("theory_baselines", "Theory baseline: the minimal naming game", order=15,
                  applies=lambda context: bool(_free_minimal(context)))
def theory_baselines(context: ReportContext) -> None:
    figure, axes = context.figure()
    axis = axes[0][0]
    rows: list[list[Any]] = []
    table: list[list[Any]] = []
    for number, experiment in enumerate(_free_minimal(context)):
        params = experiment.params
        agents = int(params.get("agents", 24))
        pool = len(experiment.names) if params.get("invention", "pool") == "pool" else None
        matrix = scheduler_success(experiment)
        rounds = matrix.shape[1]
        mean = np.nanmean(matrix, axis=0)
        fast = success_curve(agents, rounds, runs=FAST_RUNS, seed=0, pool_size=pool)
        label = f"{experiment.label}: N={agents}, W={pool or 'new words'}"
        x = np.arange(1, rounds + 1)
        axis.plot(x, mean, color=f"C{number}", lw=2, label=f"scheduler, rule agents ({len(matrix)} runs), {label}")
        axis.plot(x, fast, color=f"C{number}", ls="--", lw=1.5, label=f"numpy fast path ({FAST_RUNS} runs)")
        rows.extend([experiment.label, agents, pool, round_ + 1, float(mean[round_]), float(fast[round_])]
                    for round_ in range(rounds))
        summaries = experiment.summaries()
        converged = [summary["converged_t"] for summary in summaries if summary.get("converged_t") is not None]
        table.append([experiment.label, agents, pool, len(summaries), len(converged),
                      float(np.mean(converged)) if converged else None,
                      float(np.mean([summary.get("peak_words", 0) for summary in summaries]))])
    axis.set_xlabel("population round (N/2 interactions)")
    axis.set_ylabel("success rate")
    axis.set_ylim(0, 1.02)
    axis.legend(fontsize=7, loc="lower right")
    context.add_figure("theory_success_rate", "Minimal naming game: scheduler against fast path", figure,
                       ["experiment", "agents", "pool_size", "round", "scheduler_success", "fast_path_success"], rows,
                       caption="Mean success per population round of the recorded rule-agent runs (solid) and of "
                               f"{FAST_RUNS} runs of the vectorised model (dashed); the two should coincide.")
    context.add_table("theory_convergence", "Minimal naming game: convergence",
                      ["experiment", "agents", "pool_size", "runs", "converged", "mean_converged_t", "mean_peak_words"], table,
                      caption="Interactions to global consensus (every inventory the same single word) and the "
                              "peak total number of words (Baronchelli et al. 2006: both grow like N^1.5).")
