"""SIGN's figures and tables from an output directory (Zhang and Woisetschläger 2026).

From the run summaries (`summary.json`, one per experiment under the directory) of SIGN runs:

- `sign_agreement` (Fig. 1): population agreement over rounds per condition, one panel per
  alpha, at one N and K (N = 12 and K = 5 where present; NL has K = 0), mean over seeds with
  a band of one standard deviation;
- `sign_agreement_table` (Table 1): average population agreement (a run's agreement averaged
  over its rounds) by condition, N and K, mean and standard deviation over every run of the
  cell (seeds and alphas); and `sign_cells`, per alpha, with the final (last-round) agreement
  and how many runs reached each threshold;
- `sign_tokens` (Fig. 2 and 5): tokens (prompt plus completion, every attempt) to reach 50,
  60, 70 and 90% agreement per condition, at Fig. 1's N and K over every alpha: the median
  over the runs that reached it, with how many of how many runs did;
- `sign_compliance`: per condition, the share of decisions compliant at once, compliant after
  the retry, decoded from free text, fallback and no name, and the retry rate;
- `sign_models` (mixed populations only): agreement split by model and the winning name.

    python -m agentsim.analysis.sign DIR [--out DIR/sign]

writes each as PNG (figures) and CSV. `sign_section(context)` builds the same items into a
report context (`agentsim.analysis.report`): register it with
`register_section("sign", "SIGN: schema-induced naming", order=70, applies=sign_applies)(sign_section)`.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from ..errors import UserError  # noqa: E402

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
    """Every finished SIGN run summarised under `root` (any depth)."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"'{root}' is not a directory; give the output directory of a SIGN run (e.g. results/sign)")
    runs = []
    for path in sorted(root.rglob("summary.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for run in document.get("runs", []):
            if run.get("status") == "done" and "agreement_by_round" in run and run.get("condition") in CONDITIONS:
                runs.append(run | {"experiment": str(path.parent)})
    return runs


def sign_applies(context: Any) -> bool:
    """Whether a report context's directory holds SIGN runs."""
    return bool(load_runs(context.root))


def sign_section(context: Any) -> None:
    """Build SIGN's figures and tables into a report context (`add_figure`, `add_table`)."""
    for item in build_items(load_runs(context.root)):
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


def _focus(runs: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """The N and K of Fig. 1: N = 12 and K = 5 where present, else the most common ones."""
    sizes = [int(run["agents"]) for run in runs]
    memories = [int(run["memory"]) for run in runs if int(run["memory"]) > 0]
    size = 12 if 12 in sizes else max(set(sizes), key=sizes.count)
    memory = 5 if 5 in memories else (max(set(memories), key=memories.count) if memories else 0)
    return size, memory


def agreement_figure(runs: Sequence[dict[str, Any]]) -> SignFigure:
    size, memory = _focus(runs)
    alphas = sorted({float(run["alpha"]) for run in runs})
    figure = Figure(figsize=(4.2 * len(alphas), 3.6), layout="constrained")
    axes = figure.subplots(1, len(alphas), squeeze=False)[0]
    rows: list[list[Any]] = []
    for axis, alpha in zip(axes, alphas):
        for condition in CONDITIONS:
            wanted = 0 if condition == "nl" else memory
            series = [run["agreement_by_round"] for run in runs
                      if _cell(run) == (condition, size, wanted, alpha) and run["agreement_by_round"]]
            if not series:
                continue
            length = min(len(values) for values in series)
            means, sds = [], []
            for round_ in range(length):
                mean, sd = _mean_sd([values[round_] for values in series])
                means.append(mean)
                sds.append(sd)
                rows.append([condition, size, wanted, alpha, round_ + 1, round(mean, 4), round(sd, 4), len(series)])
            x = range(1, length + 1)
            axis.plot(x, means, color=COLOURS[condition], label=LABELS[condition])
            axis.fill_between(x, [m - s for m, s in zip(means, sds)], [m + s for m, s in zip(means, sds)],
                              color=COLOURS[condition], alpha=0.2, linewidth=0)
        axis.set_title(f"α = {alpha:g}")
        axis.set_xlabel("round")
        axis.set_ylim(0, 1.02)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("population agreement")
    axes[0].legend(loc="lower right")
    figure.suptitle(f"Population agreement by condition (N = {size}, K = {memory}; NL keeps no memory)")
    return SignFigure("sign_agreement", "Population agreement over rounds (SIGN Fig. 1)", figure,
                      ["condition", "agents", "memory", "alpha", "round", "mean_agreement", "sd_agreement", "runs"], rows,
                      "Mean over seeds, band: one standard deviation.")


def agreement_table(runs: Sequence[dict[str, Any]]) -> SignTable:
    cells: dict[tuple[int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        condition, size, memory, _alpha = _cell(run)
        cells[(size, memory)][condition].append(float(run["mean_agreement"]))
    rows = []
    for (size, memory), by_condition in sorted(cells.items(), key=lambda item: (item[0][1], item[0][0])):
        row: list[Any] = [size, memory]
        for condition in CONDITIONS:
            values = by_condition.get(condition, [])
            mean, sd = _mean_sd(values)
            row.append(f"{mean:.3f} ± {sd:.3f}" if values else "—")
        rows.append(row)
    return SignTable("sign_agreement_table", "Average population agreement by condition (SIGN Table 1)",
                     ["N", "K", "NL", "NL-SW", "Schema"], rows,
                     "A run's agreement averaged over its rounds; mean ± standard deviation over the runs of the "
                     "cell (seeds and alphas).")


def cells_table(runs: Sequence[dict[str, Any]]) -> SignTable:
    cells: dict[tuple[str, int, int, float], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        cells[_cell(run)].append(run)
    rows = []
    for (condition, size, memory, alpha), members in sorted(cells.items(), key=lambda item: (CONDITIONS.index(item[0][0]), item[0][1:])):
        average = _mean_sd([float(run["mean_agreement"]) for run in members])
        final = _mean_sd([float(run["final_agreement"]) for run in members])
        row: list[Any] = [LABELS[condition], size, memory, alpha, len(members), round(average[0], 4), round(average[1], 4),
                          round(final[0], 4), round(final[1], 4)]
        for threshold in THRESHOLDS:
            reached = [run["rounds_to_threshold"][threshold] for run in members if run["rounds_to_threshold"].get(threshold)]
            row.append(f"{len(reached)}/{len(members)}")
        rows.append(row)
    return SignTable("sign_cells", "Every cell of the grid", ["condition", "N", "K", "alpha", "runs", "mean_agreement",
                     "sd_mean", "final_agreement", "sd_final"] + [f"reached_{threshold}" for threshold in THRESHOLDS], rows)


def tokens_figure(runs: Sequence[dict[str, Any]]) -> SignFigure:
    size, memory = _focus(runs)
    runs = [run for run in runs if int(run["agents"]) == size and int(run["memory"]) == (0 if run["condition"] == "nl" else memory)]
    figure = Figure(figsize=(3.4 * len(THRESHOLDS), 3.6), layout="constrained")
    axes = figure.subplots(1, len(THRESHOLDS), squeeze=False)[0]
    rows: list[list[Any]] = []
    for axis, threshold in zip(axes, THRESHOLDS):
        positions, heights, colours, notes = [], [], [], []
        for position, condition in enumerate(CONDITIONS):
            members = [run for run in runs if run["condition"] == condition]
            if not members:
                continue
            tokens = [run["tokens_to_threshold"][threshold] for run in members
                      if run["tokens_to_threshold"].get(threshold) is not None]
            rounds = [run["rounds_to_threshold"][threshold] for run in members
                      if run["rounds_to_threshold"].get(threshold) is not None]
            median = statistics.median(tokens) if tokens else None
            rows.append([condition, size, 0 if condition == "nl" else memory, threshold, len(tokens), len(members), median,
                         statistics.median(rounds) if rounds else None])
            positions.append(position)
            heights.append(median or 0)
            colours.append(COLOURS[condition])
            notes.append(f"{len(tokens)}/{len(members)}" if tokens else "not\nreached")
        axis.bar(positions, heights, color=colours)
        for position, height, note in zip(positions, heights, notes):
            axis.annotate(note, (position, height or 1), ha="center", va="bottom", fontsize=8)
        axis.set_xticks(range(len(CONDITIONS)), [LABELS[c] for c in CONDITIONS])
        axis.set_ylim(0, max(heights + [1]) * 1.15)
        axis.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
        axis.set_title(f"{float(threshold):.0%} agreement")
        axis.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("tokens to reach it (median)")
    figure.suptitle(f"Tokens to reach an agreement threshold (SIGN Fig. 2 and 5; N = {size}, K = {memory}, all α)")
    return SignFigure("sign_tokens", "Tokens to agreement thresholds (SIGN Fig. 2 and 5)", figure,
                      ["condition", "agents", "memory", "threshold", "runs_reached", "runs", "median_tokens", "median_rounds"], rows,
                      "Prompt plus completion tokens of every attempt, retries and discarded replies included; "
                      "median over the runs that reached the threshold (reached/all above each bar).")


def compliance_table(runs: Sequence[dict[str, Any]]) -> SignTable:
    rows = []
    for condition in CONDITIONS:
        members = [run for run in runs if run["condition"] == condition]
        if not members:
            continue
        decisions = sum(run["decisions"] for run in members)
        row: list[Any] = [LABELS[condition], len(members), decisions]
        for route in ROUTES:
            share = sum((run["route_rates"].get(route) or 0) * run["decisions"] for run in members)
            row.append(round(share / decisions, 4) if decisions else None)
        retried = sum((run.get("retry_rate") or 0) * run["decisions"] for run in members)
        row.append(round(retried / decisions, 4) if decisions else None)
        rows.append(row)
    return SignTable("sign_compliance", "How names were obtained, per condition",
                     ["condition", "runs", "decisions", *ROUTES, "retry_rate"], rows,
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentsim.analysis.sign",
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
