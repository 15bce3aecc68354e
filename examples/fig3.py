"""Fig. 3 of Flint Ashery, Aiello and Baronchelli (Sci. Adv. 2025) from the Python API: a
committed minority against an established convention, and the critical mass that overturns it.

A population of N agents starts in consensus on one name of the pair {Q, M} (each memory holds
five successful plays of it); a committed minority that always says the other name replaces
some of them. For each minority size and each convention, `agentsim.run` runs seeded replicates
and the DataFrames give (A) the alternative's mean share among the other agents' productions,
round by round, and (B) the share of runs in which the convention flipped (the alternative at
95% of the others' latest choices within `max_rounds` population rounds); the critical mass is
the smallest minority that flips it in every run. As in the paper, the stronger convention
needs a larger minority to be overturned.

    python examples/fig3.py                                   # N = 24, sizes 2..22, 10 runs, stand-in
    python examples/fig3.py --backend openai:gpt-4o-mini --runs 3 --sizes 4,8,12,16
    python examples/fig3.py --agents 8 --sizes 2,6 --runs 2 --max-rounds 5   # a quick look

It writes `fig3.png` (and `fig3.csv`, the numbers drawn) into `--out`, with each size's runs
in a sub-directory that `agentsim.open` (or `python -m agentsim report`) reads again.
The scenario is `scenarios/critical_mass_search.py`: on the stand-in, M is the favoured name.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.figure import Figure  # no pyplot: a notebook's backend stays as it is

import agentsim

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "critical_mass_search.py"
CONVENTIONS = (("M", "Q"), ("Q", "M"))  # (majority, committed alternative)


def committed_runs(majority: str, alternative: str, size: int, options: argparse.Namespace) -> pd.DataFrame:
    """One size's runs against one convention: per run and round, the alternative's share."""
    results = agentsim.run(
        SCENARIO, backend=options.backend, runs=options.runs, seed=options.seed,
        overrides={"agents": options.agents, "committed": size, "majority_name": majority, "committed_name": alternative,
                   "max_rounds": options.max_rounds},
        out=options.out / f"{majority}_to_{alternative}" / f"committed_{size:03d}")
    rounds = results.rounds()
    # A run stops mid-round when it flips: that last, partial round's share is of a few choices only.
    rounds = rounds[rounds["interactions"] == options.agents // 2][["run", "round", "alternative_share"]]
    flipped = results.runs().set_index("run")["flip"].astype(bool)
    results.close()
    return rounds.assign(flipped=rounds["run"].map(flipped), majority=majority, alternative=alternative, committed=size)


def figure(table: pd.DataFrame, agents: int, max_rounds: int) -> Figure:
    """Panel A per convention (mean alternative share per round, one line per size) and panel B
    (the share of runs flipped against the minority's fraction of N)."""
    fig = Figure(figsize=(15, 4.2), layout="constrained")
    axes = fig.subplots(1, 3)
    for axis, (majority, alternative) in zip(axes[:2], CONVENTIONS, strict=True):
        own = table[(table["majority"] == majority)]
        sizes = own["committed"].nunique()
        colours = matplotlib.colormaps["viridis"]([index / max(1, sizes - 1) for index in range(sizes)])
        for colour, (size, rows) in zip(colours, own.groupby("committed"), strict=True):
            # A run that flipped stopped there: it keeps its last share afterwards, as the paper's means do.
            shares = rows.pivot(index="run", columns="round", values="alternative_share")
            mean = shares.reindex(columns=range(max_rounds)).ffill(axis=1).mean()
            axis.plot(mean.index + 1, mean.values, color=colour, label=f"{size} committed")
        axis.axhline(0.95, color="black", linestyle="--", linewidth=1)
        axis.set(title=f"A: consensus on {majority}, minority says {alternative}", xlabel="population round",
                 ylabel=f"P({alternative}) among the others", ylim=(0, 1.02), xlim=(1, max_rounds))
        axis.legend(fontsize=7, ncol=2)
    flips = table.drop_duplicates(["majority", "committed", "run"]).groupby(["majority", "committed"])["flipped"].mean()
    for majority, alternative in CONVENTIONS:
        shares = flips.loc[majority]
        axes[2].plot(shares.index / agents, shares.values, marker="o", label=f"against {majority} (minority says {alternative})")
    axes[2].set(title="B: runs flipped by the minority's size", xlabel="committed fraction of N", ylabel="share of runs flipped",
                ylim=(-0.02, 1.02))
    axes[2].legend(fontsize=8)
    return fig


def critical_masses(table: pd.DataFrame) -> dict[str, int | None]:
    """Per convention, the smallest size tried from which on every size tried flipped every run
    (None: the largest did not): the paper's critical mass, robust to a lucky smaller size."""
    runs = table.drop_duplicates(["majority", "committed", "run"])
    every = runs.groupby(["majority", "committed"])["flipped"].all()
    masses: dict[str, int | None] = {}
    for majority, _ in CONVENTIONS:
        critical = None
        for size, flipped in sorted(every.loc[majority].items(), reverse=True):
            if not flipped:
                break
            critical = int(size)
        masses[majority] = critical
    return masses


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="stand-in", help="the model every agent asks (default: the stand-in)")
    parser.add_argument("--agents", type=int, default=24, help="N (default 24, the paper's)")
    parser.add_argument("--sizes", default="", help="committed sizes to try, e.g. 2,6,10 (default: 2, 4, ... N-2)")
    parser.add_argument("--runs", type=int, default=10, help="runs per size and convention (default 10)")
    parser.add_argument("--max-rounds", type=int, default=30, help="population rounds a flip may take (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results") / "fig3_api")
    options = parser.parse_args(argv)
    sizes = [int(size) for size in options.sizes.split(",")] if options.sizes else list(range(2, options.agents - 1, 2))
    table = pd.concat([committed_runs(majority, alternative, size, options)
                       for majority, alternative in CONVENTIONS for size in sizes], ignore_index=True)
    options.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(options.out / "fig3.csv", index=False)
    fig = figure(table, options.agents, options.max_rounds)
    fig.savefig(options.out / "fig3.png", dpi=110)
    for majority, size in critical_masses(table).items():
        found = f"{size} of {options.agents}" if size is not None else f"none of the sizes tried ({options.sizes or 'all'})"
        print(f"critical mass against {majority}: {found}")
    print(f"wrote {options.out / 'fig3.png'} and {options.out / 'fig3.csv'}")
    return table


if __name__ == "__main__":
    main()
