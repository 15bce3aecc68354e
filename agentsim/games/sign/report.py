"""SIGN's figures and tables from an output directory (Zhang and Woisetschläger 2026).

From the run summaries (the stores' `runs`, one store per experiment under the directory) of SIGN runs:

- `sign_agreement` (Fig. 1): population agreement over rounds per condition, one row of
  panels per (N, K) cell of the grid and one panel per alpha (NL, which keeps no memory,
  beside every K of its N), mean over seeds with a band of one standard deviation;
- `sign_agreement_table` (Table 1): average population agreement (a run's agreement averaged
  over its rounds) by condition, N and K, mean and standard deviation over every run of the
  cell (seeds and alphas); and `sign_cells`, per alpha, with the final (last-round) agreement
  and how many runs reached each threshold;
- `sign_tokens` (Fig. 2 and 5): tokens (prompt plus completion, every attempt) to reach 50,
  60, 70 and 90% agreement per condition, one row per (N, K), over every alpha: the median
  over the runs that reached it, with how many of how many runs did;
- `sign_compliance`: per condition, the share of decisions compliant at once, compliant after
  the retry, decoded from free text, fallback and no name, and the retry rate;
- `sign_models` (mixed populations only): agreement split by model and the winning name.

    python -m agentsim.games.sign.report DIR [--out DIR/sign]

writes each as PNG (figures) and CSV. `sign_section(context)` builds the same items into a
report context (`agentsim.analysis.report`), where this module registers it: the SIGN family
names this module among its report sections (agentsim/games/sign/__init__.py).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure

from ...analysis.recorded import RecordedExperiment, find_experiments
from ...analysis.report import register_section
from ...errors import UserError

THRESHOLDS = ("0.5", "0.6", "0.7", "0.9")
CONDITIONS = ("nl", "nl-sw", "schema")
LABELS = {"nl": "NL", "nl-sw": "NL-SW", "schema": "Schema"}
COLOURS = {"nl": "#9e9e9e", "nl-sw": "#1f77b4", "schema": "#d62728"}
ROUTES = ("compliant", "compliant_after_retry", "decoded", "fallback", "no_name")


@dataclass
class SignFigure:
    name: str
    title: str
    figure: Figure
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""


@dataclass
class SignTable:
    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""


def load_runs(root: Path | str) -> list[dict[str, Any]]:
    """Every finished SIGN run summarised under `root` (any depth), read from the stores (what
    summary.json repeats is not read: a results directory's store is its record)."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"'{root}' is not a directory; give the output directory of a SIGN run (e.g. results/sign)")
    experiments = find_experiments(root)
    try:
        return sign_runs(experiments)
    finally:
        for experiment in experiments:
            experiment.close()


def sign_runs(experiments: Sequence[RecordedExperiment]) -> list[dict[str, Any]]:
    """The finished SIGN runs of `experiments`, each run's summary with its experiment's directory."""
    runs = []
    for experiment in experiments:
        for row in experiment.runs:
            run = row["summary"]
            if "agreement_by_round" in run and run.get("condition") in CONDITIONS:
                runs.append(run | {"status": row["status"], "experiment": str(experiment.directory)})
    return runs


def sign_applies(context: Any) -> bool:
    """Whether a report context's directory holds SIGN runs."""
    return bool(sign_runs(context.experiments))


def sign_section(context: Any) -> None:
    """Build SIGN's figures and tables into a report context (`add_figure`, `add_table`)."""
    for item in build_items(sign_runs(context.experiments)):
        if isinstance(item, SignFigure):
            context.add_figure(item.name, item.title, item.figure, item.columns, item.rows, item.caption)
        else:
            context.add_table(item.name, item.title, item.columns, item.rows, item.caption)


def build_items(runs: Sequence[dict[str, Any]]) -> list[SignFigure | SignTable]:
    if not runs:
        return []
    items: list[SignFigure | SignTable] = [agreement_figure(runs), agreement_table(runs), cells_table(runs),
                                           tokens_figure(runs), compliance_table(runs)]
    models = models_table(runs)
    if models is not None:
        items.append(models)
    return items


def write_report(root: Path | str, out: Path | str | None = None) -> list[Path]:
    """Write every item as PNG and/or CSV under `out` (default ROOT/sign)."""
    runs = load_runs(root)
    if not runs:
        raise UserError(f"no finished SIGN runs under '{root}'; run scenarios/sign_schema.py first")
    out = Path(out) if out is not None else Path(root) / "sign"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for item in build_items(runs):
        if isinstance(item, SignFigure):
            png = out / f"{item.name}.png"
            item.figure.savefig(png, dpi=110)
            written.append(png)
        data = out / f"{item.name}.csv"
        with data.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(item.columns)
            writer.writerows(item.rows)
        written.append(data)
    return written


# --- the items ---------------------------------------------------------------------------
def _cell(run: dict[str, Any]) -> tuple[str, int, int, float]:
    return run["condition"], int(run["agents"]), int(run["memory"]), float(run["alpha"])


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    return (statistics.fmean(values), statistics.pstdev(values)) if values else (float("nan"), float("nan"))


def _sizes(runs: Sequence[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """Every (experiment, N, K) cell, K from the conditions that keep a memory (NL keeps
    none: its runs are drawn beside every K of their N); a grid of NL runs alone is (N, 0).
    Experiments (output directories: other populations, other models) are never pooled."""
    cells = {(run["experiment"], int(run["agents"]), int(run["memory"])) for run in runs if run["condition"] != "nl"}
    cells |= {(run["experiment"], int(run["agents"]), 0) for run in runs
              if not any(cell[:2] == (run["experiment"], int(run["agents"])) for cell in cells)}
    return sorted(cells)


def _members(runs: Sequence[dict[str, Any]], condition: str, experiment: str, size: int, memory: int) -> list[dict[str, Any]]:
    wanted = 0 if condition == "nl" else memory
    return [run for run in runs if run["condition"] == condition and run["experiment"] == experiment
            and int(run["agents"]) == size and int(run["memory"]) == wanted]


def _where(experiment: str, runs: Sequence[dict[str, Any]]) -> str:
    """An experiment's name in titles: its directory, relative to the others' common root."""
    directories = sorted({run["experiment"] for run in runs})
    if len(directories) == 1:
        return Path(experiment).name
    import os

    common = os.path.commonpath(directories)
    return Path(experiment).relative_to(common).as_posix() if experiment != common else Path(experiment).name


def agreement_figure(runs: Sequence[dict[str, Any]]) -> SignFigure:
    """One row of panels per (N, K) cell, one panel per alpha: no cell of the grid left out."""
    cells = _sizes(runs)
    alphas = sorted({float(run["alpha"]) for run in runs})
    figure = Figure(figsize=(4.2 * len(alphas), 3.3 * len(cells) + 0.6), layout="constrained")
    axes = figure.subplots(len(cells), len(alphas), squeeze=False)
    rows: list[list[Any]] = []
    for line, (experiment, size, memory) in enumerate(cells):
        where = _where(experiment, runs)
        for axis, alpha in zip(axes[line], alphas):
            for condition in CONDITIONS:
                series = [run["agreement_by_round"] for run in _members(runs, condition, experiment, size, memory)
                          if float(run["alpha"]) == alpha and run["agreement_by_round"]]
                if not series:
                    continue
                length = min(len(values) for values in series)
                means, sds = [], []
                for round_ in range(length):
                    values = [series_values[round_] for series_values in series]
                    mean, sd = _mean_sd(values)
                    means.append(mean)
                    sds.append(sd)
                    sem = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0
                    rows.append([where, condition, size, 0 if condition == "nl" else memory, alpha, round_ + 1, round(mean, 4),
                                 round(sd, 4), round(sem, 4), len(series)])
                x = range(1, length + 1)
                axis.plot(x, means, color=COLOURS[condition], label=f"{LABELS[condition]} ({len(series)} runs)")
                axis.fill_between(x, [m - s for m, s in zip(means, sds)], [m + s for m, s in zip(means, sds)],
                                  color=COLOURS[condition], alpha=0.2, linewidth=0)
            axis.set_title(f"{where}: N = {size}, K = {memory}, α = {alpha:g}", fontsize=9)
            if not axis.get_legend_handles_labels()[1]:
                axis.text(0.5, 0.5, "no runs in this cell", ha="center", va="center", transform=axis.transAxes)
                continue
            axis.set_xlabel("round")
            axis.set_ylim(0, 1.02)
            axis.grid(alpha=0.3)
            axis.legend(loc="lower right", fontsize=7)
        axes[line][0].set_ylabel("population agreement")
    figure.suptitle("Population agreement by condition (mean, band: ± one SD over seeds; NL keeps no memory)")
    return SignFigure("sign_agreement", "Population agreement over rounds (SIGN Fig. 1)", figure,
                      ["experiment", "condition", "agents", "memory", "alpha", "round", "mean_agreement", "sd_agreement", "sem_agreement",
                       "runs"], rows,
                      "Mean over seeds, band: one standard deviation (the CSV also has the standard error); one row of "
                      "panels per N and K of the grid, NL's runs (no memory) beside every K of their N.")


def agreement_table(runs: Sequence[dict[str, Any]]) -> SignTable:
    cells: dict[tuple[str, int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        condition, size, memory, _alpha = _cell(run)
        cells[(run["experiment"], size, memory)][condition].append(float(run["mean_agreement"]))
    rows = []
    for (experiment, size, memory), by_condition in sorted(cells.items(), key=lambda item: (item[0][0], item[0][2], item[0][1])):
        row: list[Any] = [_where(experiment, runs), size, memory]
        for condition in CONDITIONS:
            values = by_condition.get(condition, [])
            mean, sd = _mean_sd(values)
            row.append(f"{mean:.3f} ± {sd:.3f}" if values else "—")
        rows.append(row)
    return SignTable("sign_agreement_table", "Average population agreement by condition (SIGN Table 1)",
                     ["experiment", "N", "K", "NL", "NL-SW", "Schema"], rows,
                     "A run's agreement averaged over its rounds; mean ± standard deviation over the runs of the "
                     "cell (seeds and alphas).")


def cells_table(runs: Sequence[dict[str, Any]]) -> SignTable:
    cells: dict[tuple[str, str, int, int, float], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        cells[(run["experiment"], *_cell(run))].append(run)
    rows = []
    for (experiment, condition, size, memory, alpha), members in sorted(
            cells.items(), key=lambda item: (item[0][0], CONDITIONS.index(item[0][1]), item[0][2:])):
        average = _mean_sd([float(run["mean_agreement"]) for run in members])
        final = _mean_sd([float(run["final_agreement"]) for run in members])
        row: list[Any] = [_where(experiment, runs), LABELS[condition], size, memory, alpha, len(members),
                          round(average[0], 4), round(average[1], 4),
                          round(final[0], 4), round(final[1], 4)]
        for threshold in THRESHOLDS:
            reached = [run["rounds_to_threshold"][threshold] for run in members if run["rounds_to_threshold"].get(threshold)]
            row.append(f"{len(reached)}/{len(members)}")
        rows.append(row)
    return SignTable("sign_cells", "Every cell of the grid", ["experiment", "condition", "N", "K", "alpha", "runs", "mean_agreement",
                     "sd_mean", "final_agreement", "sd_final"] + [f"reached_{threshold}" for threshold in THRESHOLDS], rows)


def tokens_figure(runs: Sequence[dict[str, Any]]) -> SignFigure:
    """One row of panels per (N, K) cell, one panel per threshold, every alpha pooled."""
    cells = _sizes(runs)
    figure = Figure(figsize=(3.4 * len(THRESHOLDS), 3.3 * len(cells) + 0.6), layout="constrained")
    axes = figure.subplots(len(cells), len(THRESHOLDS), squeeze=False)
    rows: list[list[Any]] = []
    for line, (experiment, size, memory) in enumerate(cells):
        where = _where(experiment, runs)
        for axis, threshold in zip(axes[line], THRESHOLDS):
            positions, heights, colours, notes = [], [], [], []
            for position, condition in enumerate(CONDITIONS):
                members = _members(runs, condition, experiment, size, memory)
                if not members:
                    continue
                tokens = [run["tokens_to_threshold"][threshold] for run in members
                          if run["tokens_to_threshold"].get(threshold) is not None]
                rounds = [run["rounds_to_threshold"][threshold] for run in members
                          if run["rounds_to_threshold"].get(threshold) is not None]
                median = statistics.median(tokens) if tokens else None
                rows.append([where, condition, size, 0 if condition == "nl" else memory, threshold, len(tokens), len(members), median,
                             statistics.median(rounds) if rounds else None])
                positions.append(position)
                heights.append((median or 0) / 1000)
                colours.append(COLOURS[condition])
                notes.append(f"{len(tokens)}/{len(members)}" if tokens else "not\nreached")
            axis.bar(positions, heights, color=colours)
            top = max(heights + [1])
            for position, height, note in zip(positions, heights, notes):
                axis.annotate(note, (position, height or 0.02 * top), ha="center", va="bottom", fontsize=8)
            axis.set_xticks(range(len(CONDITIONS)), [LABELS[c] for c in CONDITIONS])
            axis.set_ylim(0, top * 1.2)
            axis.set_title(f"{where}: N = {size}, K = {memory}\n{float(threshold):.0%} agreement", fontsize=9)
            axis.grid(alpha=0.3, axis="y")
        axes[line][0].set_ylabel("thousand tokens to reach it (median)")
    figure.suptitle("Tokens to reach an agreement threshold (SIGN Fig. 2 and 5; every α; reached/runs above each bar)")
    return SignFigure("sign_tokens", "Tokens to agreement thresholds (SIGN Fig. 2 and 5)", figure,
                      ["experiment", "condition", "agents", "memory", "threshold", "runs_reached", "runs", "median_tokens",
                       "median_rounds"], rows,
                      "Prompt plus completion tokens of every attempt, retries and discarded replies included; "
                      "median over the runs that reached the threshold (reached/all above each bar); one row per N and K.")


def compliance_table(runs: Sequence[dict[str, Any]]) -> SignTable:
    rows = []
    for experiment, condition in sorted({(run["experiment"], run["condition"]) for run in runs},
                                        key=lambda pair: (pair[0], CONDITIONS.index(pair[1]))):
        members = [run for run in runs if run["condition"] == condition and run["experiment"] == experiment]
        decisions = sum(run["decisions"] for run in members)
        row: list[Any] = [_where(experiment, runs), LABELS[condition], len(members), decisions]
        for route in ROUTES:
            share = sum((run["route_rates"].get(route) or 0) * run["decisions"] for run in members)
            row.append(round(share / decisions, 4) if decisions else None)
        retried = sum((run.get("retry_rate") or 0) * run["decisions"] for run in members)
        row.append(round(retried / decisions, 4) if decisions else None)
        rows.append(row)
    return SignTable("sign_compliance", "How names were obtained, per condition",
                     ["experiment", "condition", "runs", "decisions", *ROUTES, "retry_rate"], rows,
                     "compliant: the condition's parser accepted the first reply (Schema: the exact schema; "
                     "NL: exactly one valid name); decoded: free text of a non-compliant reply.")


def models_table(runs: Sequence[dict[str, Any]]) -> SignTable | None:
    rows = []
    for run in runs:
        favourites = run.get("standin_favourites") or {}
        for label, row in sorted((run.get("by_model") or {}).items()):
            favourite = favourites.get(label)
            won = favourite == run.get("leading_name") if favourite else label in (run.get("winning_model") or [])
            rows.append([LABELS[run["condition"]], run["seed"], label, row["agents"], row["agreement"],
                         row["early_name"], favourite, run.get("leading_name"), won])
    if not rows:
        return None
    return SignTable("sign_models", "Mixed population: agreement by model and whose name won",
                     ["condition", "seed", "model", "agents", "agreement", "early_name", "standin_favourite", "winning_name",
                      "won"], rows,
                     "won: the model's favourite (the stand-in family's bias name where known, else the name its "
                     "agents said most in their first encounters) is the population's most common name at the end.")


register_section("sign", "SIGN: schema-induced naming", order=70, applies=sign_applies)(sign_section)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentsim.games.sign.report",
                                     description="SIGN's figures and tables (PNG and CSV) from an output directory.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="where to write (default: DIRECTORY/sign)")
    options = parser.parse_args(argv)
    try:
        written = write_report(options.directory, options.out)
    except UserError as error:
        print(f"agentsim: error: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
