"""Convergence time and final agreement per network topology (scenarios/network_topology.py).

    network_section(DIR)            writes DIR/report/network_topology.{png,csv} and
                                    network_topology_summary.csv; returns the summary rows
    topology_summary(runs)          the per-topology table from run summaries
    network_figure(runs)            the figure and its data, for any report to place

Runs are the run summaries a `NetworkNamingGame` records (`topology`, `agreement_round`,
`final_agreement`, `rounds`, ...). When `agentsim.analysis.report` (the `report` command)
has a section registry, importing this module registers the section there.
"""

from __future__ import annotations

import csv
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ...analysis.report import register_section
from ...errors import UserError
from ...store import DATABASE, Store

SCENARIO_NAME = "network_naming_game"
ORDER = ("complete", "ring", "lattice", "small-world", "scale-free", "erdos-renyi")  # as the issue lists them
RUN_COLUMNS = ("run", "topology", "mean_degree", "clustering", "agreement_round", "rounds", "final_agreement",
               "final_success_rate")


@dataclass(frozen=True)
class TopologyRow:
    """One topology's runs: how many agreed, how fast (median and mean over those that did,
    in population rounds), and the agreement they ended with (all runs)."""

    topology: str
    runs: int
    agreed: int
    median_agreement_round: float | None
    mean_agreement_round: float | None
    mean_final_agreement: float
    mean_degree: float
    clustering: float


def network_runs(directory: Path | str) -> list[dict[str, Any]]:
    """The finished runs' summaries of the network experiment(s) recorded under `directory`."""
    root = Path(directory)
    databases = sorted(root.rglob(DATABASE)) if root.is_dir() else []
    if not databases:
        raise UserError(f"no runs found under '{root}'; run scenarios/network_topology.py with --out {root} first")
    runs: list[dict[str, Any]] = []
    for database in databases:
        store = Store.read_only(database.parent)
        try:
            runs.extend(row["summary"] for row in store.runs() if row["summary"] and "topology" in row["summary"])
        finally:
            store.close()
    if not runs:
        raise UserError(f"the runs under '{root}' are not network runs (scenarios/network_topology.py)")
    return runs


def topology_summary(runs: list[dict[str, Any]]) -> list[TopologyRow]:
    """One row per topology present, in the order of ORDER."""
    present = sorted({run["topology"] for run in runs}, key=lambda kind: (ORDER.index(kind) if kind in ORDER else 99, kind))
    rows = []
    for kind in present:
        group = [run for run in runs if run["topology"] == kind]
        rounds = [run["agreement_round"] for run in group if run.get("agreement_round") is not None]
        rows.append(TopologyRow(
            topology=kind,
            runs=len(group),
            agreed=len(rounds),
            median_agreement_round=float(np.median(rounds)) if rounds else None,
            mean_agreement_round=float(np.mean(rounds)) if rounds else None,
            mean_final_agreement=float(np.mean([run["final_agreement"] for run in group])),
            mean_degree=float(np.mean([run["mean_degree"] for run in group])),
            clustering=float(np.mean([run["clustering"] for run in group])),
        ))
    return rows


def network_figure(runs: list[dict[str, Any]], groups: list[tuple[str, list[dict[str, Any]]]] | None = None
                   ) -> tuple[Figure, list[str], list[list[Any]]]:
    """Left: rounds to agreement per topology, one dot per run (hollow, at the run's last
    round, where it never agreed); right: final agreement per topology (mean and runs).
    With `groups` ((label, runs) per experiment or grid cell), one such row per group."""
    groups = groups or [("", runs)]
    figure = Figure(figsize=(10, 4.2 * len(groups)), layout="constrained")
    axes = figure.subplots(len(groups), 2, squeeze=False)
    rows: list[list[Any]] = []
    for (label, group_runs), (left, right) in zip(groups, axes):
        _draw_topologies(group_runs, left, right, label)
        rows.extend([label, *[run.get(column) for column in RUN_COLUMNS]] for run in group_runs)
    return figure, ["experiment", *RUN_COLUMNS], rows


def _draw_topologies(runs: list[dict[str, Any]], left: Any, right: Any, label: str) -> None:
    table = topology_summary(runs)
    kinds = [row.topology for row in table]
    jitter = np.random.default_rng(0)
    for position, kind in enumerate(kinds):
        group = [run for run in runs if run["topology"] == kind]
        agreed = [run["agreement_round"] for run in group if run.get("agreement_round") is not None]
        never = [run["rounds"] for run in group if run.get("agreement_round") is None]
        left.scatter(position + jitter.uniform(-0.15, 0.15, len(agreed)), agreed, color="C0", s=22, zorder=3)
        left.scatter(position + jitter.uniform(-0.15, 0.15, len(never)), never, facecolors="none", edgecolors="C3",
                     s=26, zorder=3, label="no agreement (last round)" if never and "no agreement (last round)" not in
                     left.get_legend_handles_labels()[1] else None)
        if agreed:
            left.hlines(np.median(agreed), position - 0.3, position + 0.3, color="k", lw=2, zorder=4)
        finals = [run["final_agreement"] for run in group]
        right.bar(position, np.mean(finals), color="C2", alpha=0.6)
        right.scatter(position + jitter.uniform(-0.15, 0.15, len(finals)), finals, color="k", s=12, zorder=3)
    for axes in (left, right):
        axes.set_xticks(range(len(kinds)), kinds, rotation=25)
        axes.set_xlim(-0.6, len(kinds) - 0.4)
    prefix = f"{label}: " if label else ""
    left.set_ylabel("population rounds to agreement")
    left.set_title(f"{prefix}convergence time (bar: median of runs that agreed)", fontsize=10)
    if left.get_legend_handles_labels()[1]:
        # Headroom above the runs that never agreed (drawn at their last round), so the
        # legend does not hide them.
        left.set_ylim(0, 1.25 * max(run["rounds"] for run in runs))
        left.legend(loc="upper left", fontsize=8)
    right.set_ylabel("final agreement (share on the leading name)")
    right.set_ylim(0, 1.05)
    right.set_title(f"{prefix}final agreement", fontsize=10)


def network_section(source: Path | str | list[dict[str, Any]], out: Path | str | None = None) -> list[TopologyRow]:
    """Write the figure (PNG), its per-run data (CSV) and the per-topology table (CSV) to
    `out` (default: SOURCE/report) and return the table."""
    if isinstance(source, (str, Path)):
        runs = network_runs(source)
        out_dir = Path(out) if out is not None else Path(source) / "report"
    else:
        runs = source
        if out is None:
            raise UserError("network_section needs an output directory when given runs rather than a directory")
        out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    figure, columns, rows = network_figure(runs)
    figure.savefig(out_dir / "network_topology.png", dpi=110)
    _write_csv(out_dir / "network_topology.csv", columns, rows)
    table = topology_summary(runs)
    _write_csv(out_dir / "network_topology_summary.csv", [field.name for field in fields(TopologyRow)],
               [list(astuple(row)) for row in table])
    return table


def _write_csv(path: Path, columns: list[str], rows: list[list[Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        writer.writerows(["" if value is None else value for value in row] for row in rows)


def _register_report_section() -> None:
    """Add the section to the `report` command (whose `_load_sections` imports this module)."""
    def applies(context: Any) -> bool:
        return any(experiment.scenario_name == SCENARIO_NAME for experiment in context.experiments)

    @register_section("network_topology", "Naming game on networks", order=75, applies=applies)
    def build(context: Any) -> None:
        groups = [(experiment.label, [summary for summary in experiment.summaries() if summary and "topology" in summary])
                  for experiment in context.experiments if experiment.scenario_name == SCENARIO_NAME]
        groups = [(label, runs) for label, runs in groups if runs]
        runs = [run for _label, group in groups for run in group]
        figure, columns, rows = network_figure(runs, groups)
        context.add_figure("network_topology", "Convergence time and final agreement per topology", figure, columns, rows,
                           caption="Population rounds until every agent's latest name agreed, and the final agreement, "
                                   "per interaction network at equal N.")
        context.add_table("network_topology_summary", "Per-topology convergence, per experiment",
                          ["experiment", *(field.name for field in fields(TopologyRow))],
                          [[label, *astuple(row)] for label, group in groups for row in topology_summary(group)])


_register_report_section()
