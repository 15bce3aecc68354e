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
from .committed import mean_field_critical_fraction
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


# --- the critical mass against N ---------------------------------------------------------------
def _fraction(experiment: Any) -> float | None:
    value = experiment.params.get("committed_fraction")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _size_grid(context: ReportContext) -> dict[int, dict[float, list[Any]]]:
    """Experiments (a VARIANTS cell each) whose committed minority is a fraction and whose runs
    stop at the flip, by N then by fraction: each N with at least two fractions tried."""
    grid: dict[int, dict[float, list[Any]]] = {}
    for experiment in context.experiments:
        fraction = _fraction(experiment)
        if fraction is None or experiment.params.get("stop_at") != "flip" or not experiment.runs:
            continue
        grid.setdefault(int(experiment.params.get("agents", 0)), {}).setdefault(fraction, []).append(experiment)
    return {size: by_fraction for size, by_fraction in grid.items() if len(by_fraction) >= 2}


def critical_fraction(shares: list[tuple[float, float]], level: float = 0.5) -> float | None:
    """Where the share of runs that flipped first reaches `level`, interpolated linearly
    between the fractions on either side (`shares`: (fraction, share), any order); None if it
    never does."""
    ordered = sorted(shares)
    for index, (fraction, share) in enumerate(ordered):
        if share >= level:
            if index == 0:
                return fraction
            below, below_share = ordered[index - 1]
            return below + (fraction - below) * (level - below_share) / (share - below_share)
    return None


@register_section("finite_size", "The critical mass against the population's size", order=16,
                  applies=lambda context: bool(_size_grid(context)))
def finite_size(context: ReportContext) -> None:
    grid = _size_grid(context)
    figure, axes = context.figure(width=12, height=4.2, ncols=2)
    shares_axis, mass_axis = axes[0]
    rows: list[list[Any]] = []
    masses: list[list[Any]] = []
    for number, size in enumerate(sorted(grid)):
        points = []
        for fraction, experiments in sorted(grid[size].items()):
            summaries = [summary for experiment in experiments for summary in experiment.summaries()]
            flipped = [summary for summary in summaries if summary.get("flip")]
            share = len(flipped) / len(summaries)
            points.append((fraction, share))
            rounds = [summary["flip_round"] for summary in flipped if summary.get("flip_round") is not None]
            horizon = max(int(summary.get("rounds") or 0) for summary in summaries)
            rows.append([size, fraction, len(summaries), len(flipped), round(share, 4),
                         float(np.mean(rounds)) if rounds else None, horizon])
        shares_axis.plot([fraction for fraction, _ in points], [share for _, share in points], marker="o",
                         color=f"C{number}", label=f"N = {size:,}")
        masses.append([size, critical_fraction(points), min(row[2] for row in rows if row[0] == size)])
    theory = mean_field_critical_fraction()
    shares_axis.axvline(theory, color="black", ls=":", lw=1, label=f"mean field p_c = {theory:.4f}")
    shares_axis.axhline(0.5, color="grey", lw=0.5)
    shares_axis.set(xlabel="committed fraction p", ylabel="share of runs that flipped", ylim=(-0.02, 1.02))
    shares_axis.legend(fontsize=8)
    found = [(size, mass) for size, mass, _ in masses if mass is not None]
    mass_axis.plot([size for size, _ in found], [mass for _, mass in found], marker="o", color="C3",
                   label="where half the runs flip")
    mass_axis.axhline(theory, color="black", ls=":", lw=1, label="mean field (Xie et al. 2011)")
    mass_axis.set_xscale("log")
    mass_axis.set(xlabel="population N", ylabel="critical mass (committed fraction)")
    mass_axis.legend(fontsize=8)
    context.add_figure("finite_size_critical_mass", "The critical mass against N", figure,
                       ["agents", "committed_fraction", "runs", "flipped", "share", "mean_flip_round", "horizon_rounds"],
                       rows,
                       caption="Left: the share of runs in which the committed minority flipped the convention (A "
                               "at 95% of the other agents' productions over the last 3N interactions) within the "
                               "runs' horizon, for each committed fraction and N. Right: the critical mass, where "
                               "that share first reaches one half (interpolated between the fractions tried), "
                               f"beside the mean-field critical fraction of the binary naming game ({theory:.4f}, "
                               "Xie et al. 2011). Small populations flip below it by chance; near it the time to "
                               "flip diverges, so a finite horizon puts the measured mass above it.")
    context.add_table("finite_size_critical_masses", "The critical mass by N",
                      ["agents", "critical_fraction", "runs_per_fraction"], masses,
                      caption="Interpolated where half the runs flip; empty where no fraction tried did.")
