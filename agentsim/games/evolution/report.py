"""Reading cultural-evolution runs back: per-generation series by condition (the paper's
Figs. 1-3 and the individual runs of Figs. 9-10), and the lineage of strategies and norms."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ...analysis.recorded import RecordedExperiment, find_experiments
from ...analysis.report import register_section
from ...errors import UserError
from ...llm.providers import all_on_the_stand_in
from ...store import Store
from .params import CONDITION_LABELS, CONDITIONS

GAMES = {"donor_game": "Donor game", "stag_hunt": "Stag Hunt"}
# what each game measures beside payoffs: (summary key, label)
SECOND_SERIES = {"donor_game": ("donation_fraction", "donation fraction"), "stag_hunt": ("cooperation_rate", "cooperation rate (stag)")}


def series(experiments: list[RecordedExperiment], key: str) -> dict[str, list[list[float]]]:
    """Line label -> one list per finished run of the value of `key` per generation, over the
    cells of one experiment's grid (a label is the condition, with any other parameter the
    cell changes)."""
    found: dict[str, list[list[float]]] = defaultdict(list)
    order: dict[str, int] = {}
    for experiment in experiments:
        for summary in experiment.summaries():
            condition = str(summary.get("condition", "strategies"))
            others = {name: value for name, value in experiment.variant_params.items() if name != "condition"}
            label = CONDITION_LABELS.get(condition, condition) + "".join(f", {name}={value}" for name, value in others.items())
            order.setdefault(label, _condition_order(condition))
            found[label].append([np.nan if generation.get(key) is None else float(generation[key])
                                 for generation in summary.get("generations", [])])
    return {label: found[label] for label in sorted(found, key=lambda label: (order[label], label))}


def _condition_order(condition: str) -> int:
    return CONDITIONS.index(condition) if condition in CONDITIONS else len(CONDITIONS)


def band(runs: list[list[float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard deviation, minimum and maximum over runs, per generation."""
    width = max(len(run) for run in runs)
    matrix = np.full((len(runs), width), np.nan)
    for index, run in enumerate(runs):
        matrix[index, : len(run)] = run
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return (np.nanmean(matrix, axis=0), np.nanstd(matrix, axis=0), np.nanmin(matrix, axis=0),
                    np.nanmax(matrix, axis=0))


def _with_generations(data: dict[str, list[list[float]]]) -> dict[str, list[list[float]]]:
    """The runs that finished at least one generation, by condition (a run stopped by
    max_rounds inside its first has none: nothing to draw, and no generation 1 to tabulate)."""
    kept = {condition: [run for run in runs if run] for condition, runs in data.items()}
    return {condition: runs for condition, runs in kept.items() if runs}


def applies(experiments: list[RecordedExperiment]) -> bool:
    return any(experiment.scenario_name in GAMES for experiment in experiments)


def build_section(context: Any) -> None:
    """Per experiment: mean payoff per generation by condition (mean and one standard
    deviation over runs), the second measure (donation fraction or cooperation rate), the
    individual runs, and a table of the first and last generations."""
    grids: dict[Path, list[RecordedExperiment]] = defaultdict(list)  # the cells of one experiment's VARIANTS
    for experiment in context.experiments:
        if experiment.scenario_name in GAMES:
            grids[experiment.directory].append(experiment)
    for number, cells in enumerate(grids.values(), 1):
        experiment = cells[0]
        game = experiment.scenario_name
        params = experiment.experiment.get("params") or {}
        setting = f"{GAMES[game]}, {params.get('agents')} agents, {params.get('rounds')} rounds, backend {experiment.backend}"
        suffix = f"{game}_{number}"
        payoffs = _with_generations(series(cells, "mean_payoff"))
        if not payoffs:
            context.note(f"{experiment.directory}: no run has finished a generation yet")
            continue
        key, label = SECOND_SERIES[game]
        for name, title, data, ylabel in (
                (f"evolution_payoff_{suffix}", f"Mean payoff per generation: {setting}", payoffs, "mean payoff"),
                (f"evolution_{key}_{suffix}", f"{label.capitalize()} per generation: {setting}",
                 _with_generations(series(cells, key)), label)):
            figure, axes = context.figure()
            rows = []
            for condition, runs in data.items():
                mean, std, low, high = band(runs)
                generations = np.arange(1, len(mean) + 1)
                line = axes[0][0].plot(generations, mean, marker="o", label=f"{condition} ({len(runs)} runs)")
                axes[0][0].fill_between(generations, mean - std, mean + std, alpha=0.2, color=line[0].get_color())
                rows += [[condition, int(g), len(runs), *(None if np.isnan(v) else round(float(v), 4) for v in values)]
                         for g, *values in zip(generations, mean, std, low, high)]
            axes[0][0].set_xlabel("generation")
            axes[0][0].set_ylabel(ylabel)
            axes[0][0].legend(fontsize=8)
            context.add_figure(name, title, figure, ["condition", "generation", "runs", "mean", "std", "min", "max"], rows,
                               caption="Mean over runs with one standard deviation shaded; each run's value is the mean over "
                                       "its agents (payoff: each agent's mean final payoff over the generation's games).")
        figure, axes = context.figure(width=3.2 * len(payoffs), height=3.2, ncols=len(payoffs))
        rows = []
        for column, (condition, runs) in enumerate(payoffs.items()):
            for run_number, run in enumerate(runs, 1):
                axes[0][column].plot(range(1, len(run) + 1), run, linewidth=1)
                rows += [[condition, run_number, g, value] for g, value in enumerate(run, 1)]
            axes[0][column].set_title(condition, fontsize=9)
            axes[0][column].set_xlabel("generation")
        axes[0][0].set_ylabel("mean payoff")
        context.add_figure(f"evolution_runs_{suffix}", f"Individual runs: {setting}", figure,
                           ["condition", "run", "generation", "mean_payoff"], rows)
        table = []
        for condition, runs in payoffs.items():
            mean, std, _low, _high = band(runs)
            table.append([condition, len(runs), round(float(mean[0]), 3),
                          round(float(mean[-1]), 3), round(float(std[-1]), 3)])
        context.add_table(f"evolution_summary_{suffix}", f"First and last generation: {setting}",
                          ["condition", "runs", "generation 1 mean payoff", "last generation mean payoff", "last std"], table)
        if all_on_the_stand_in(experiment.backend):
            context.note(f"{setting}: stand-in answers, not LLM results.")


# --- lineage ---------------------------------------------------------------------------------------

def generation_rows(store: Store, run: int) -> list[dict[str, Any]]:
    """A run's generation records, each with its roster (every agent's texts), in order."""
    return [json.loads(text) for (text,) in store.rows("SELECT stats FROM rounds WHERE run = ? ORDER BY round", (run,))]


def lineage_lines(directory: Path | str, run: int | None = None, *, full: bool = False) -> Iterator[str]:
    """Which survivor's strategy and norms became which newcomer's, generation by generation."""
    found = [experiment for experiment in find_experiments(directory) if experiment.scenario_name in GAMES]
    if not found:
        raise UserError(f"'{directory}' holds no Donor game or Stag Hunt run; give such a run's output directory")
    experiment = found[0]
    store = experiment.store
    runs = [row for row in store.runs() if run is None or row["run"] == run]
    if not runs:
        raise UserError(f"no run {run} in '{directory}'; runs there: {', '.join(str(row['run']) for row in store.runs())}")
    inheritance = experiment.params.get("strategy_inheritance", "advice")
    for row in runs:
        summary = row["summary"] or {}
        condition = summary.get("condition") or experiment.params.get("condition")
        yield f"run {row['run']} (seed {row['seed']}, condition {condition}, {row['status']})"
        for record in generation_rows(store, row["run"]):
            generation = record["generation"]
            yield f"  generation {generation}: mean payoff {record['mean_payoff']:.3f}"
            for entry in record["roster"]:
                if entry["born"] == generation and generation > 1:
                    sources = ", ".join(entry["strategy_from"])
                    how = "mutated from" if inheritance == "mutate" else "from the advice of"
                    origin = f"strategy {how} {sources}" + (f"; norms mutated from {entry['parent']}'s" if entry["norms"] else "")
                elif generation == 1:
                    origin = "sampled"
                else:
                    origin = "survivor" + (" (norms revised)" if entry["norms"] else "")
                mark = "survived" if entry["survived"] else "removed"
                yield f"    {entry['name']:>6} (slot {entry['agent']}) score {entry['score']:.3f} {mark}; {origin}"
                for label in ("strategy", "norms"):
                    text = entry[label]
                    if text:
                        shown = text if full else _short(text)
                        yield f"        {label}: {shown}"


def _short(text: str, width: int = 140) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


register_section("evolution", "Cultural evolution: Donor game and Stag Hunt", order=80,
                 applies=lambda context: applies(context.experiments))(build_section)
