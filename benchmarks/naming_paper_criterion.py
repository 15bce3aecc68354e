"""Table S3 of Flint Ashery et al. (2025) from the paper's own runs: `report`'s critical masses,
by agentsim's every-run rule and by the paper's mean-curve criterion, beside the paper's values,
and the paper's plotter taken literally with the windows its notebook uses.

    python benchmarks/naming_paper_criterion.py --ainorms PATH/TO/AI-norms

imports PATH's data/*.zip with `python -m agentsim import ainorms` into a temporary results
directory, builds the report there and prints its Table S3 (`table_s3_critical_mass.csv`) against
the paper's 6 / 1, 10 / 0, 5 / 5, 16 / 11 (Llama-3, Llama-3.1, Claude, Llama-2; against M / Q).
Then the plotter's `non_cm_word_use` read literally (plotter.ipynb): each flipped run padded
with 1s 30 bins past the longest run, the runs' mean cut at `max_round` (21 for Llama-3, whose
runs are 1,000 interactions at N = 48; 30 for the others, as the notebook sets them), flipped
when its last three bins sum to 2.849. Nothing of the paper's is kept. Not a test: a check to
run against a fetched copy (docs/reproducing-flint-ashery-2025.md).
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

from agentsim.analysis.report import build_report
from agentsim.games.naming.ainorms import import_source
from agentsim.games.naming.critical_mass import PAPER_FLIP, smallest_from_which

# Table S3 (model, N, H, the convention overturned): the critical mass the paper prints
TABLE_S3 = {("Llama-3-70B-Instruct", 48, 3, "M"): 6, ("Llama-3-70B-Instruct", 48, 3, "Q"): 1,
            ("Llama-3.1-70B-Instruct", 24, 5, "M"): 10, ("Llama-3.1-70B-Instruct", 24, 5, "Q"): 0,
            ("Claude-3.5-Sonnet", 24, 5, "M"): 5, ("Claude-3.5-Sonnet", 24, 5, "Q"): 5,
            ("Llama-2-70b-Chat", 24, 5, "M"): 16, ("Llama-2-70b-Chat", 24, 5, "Q"): 11}
NOTEBOOK_WINDOW = {"Llama-3-70B-Instruct": 21}  # plotter.ipynb: max_round = 21 for Llama-3, else 30


def literal_flips(curves: list[list[float]], max_round: int) -> bool:
    """plotter.ipynb's `non_cm_word_use` as written: flipped runs padded 30 bins past the
    longest, the mean over the runs still there at each bin, cut at `max_round`."""
    curves = [curve for curve in curves if curve]
    if not curves:
        return False
    longest = max(len(curve) for curve in curves)
    padded = [curve + [1.0] * (longest - len(curve) + 30) if sum(curve[-3:]) >= PAPER_FLIP else curve for curve in curves]
    width = max(len(curve) for curve in padded)
    mean = [sum(curve[index] for curve in padded if index < len(curve)) / sum(1 for curve in padded if index < len(curve))
            for index in range(width)][:max_round]
    return sum(mean[-3:]) >= PAPER_FLIP


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ainorms", type=Path, required=True, help="an AI-norms checkout (its data/*.zip)")
    options = parser.parse_args()
    data = options.ainorms / "data"
    if not data.is_dir():
        sys.exit(f"{options.ainorms} holds no data/: give an AI-norms checkout")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "ainorms"
        result = import_source(data, out)
        build_report(out)
        with (out / "report" / "table_s3_critical_mass.csv").open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    print("Table S3 from `report` (agentsim's rule: every run flips; paper's criterion: the runs' mean curve flips)")
    print(f"{'model, N, H':<36}  against  {'paper':>5}  {'agentsim':>8}  {'paper criterion':>15}")
    agree = 0
    for found in result.critical_masses:
        model, agents, memory = found.group.split(", ")
        key = (model, int(agents.removeprefix("N=")), int(memory.removeprefix("H=")), found.result.majority)
        paper = TABLE_S3.get(key)
        agree += paper is not None and paper == found.paper
        print(f"{found.group:<36}  {found.result.majority:>7}  {paper if paper is not None else '-':>5}  "
              f"{found.result.critical_mass if found.result.critical_mass is not None else 'none':>8}  "
              f"{found.paper if found.paper is not None else 'none':>15}")
    shown = sorted((row["backend"].removesuffix(" (AI-norms data)"), row["majority"], row["critical_mass_paper_criterion"])
                   for row in rows)
    computed = sorted((found.group.split(", ")[0], found.result.majority, "" if found.paper is None else str(found.paper))
                      for found in result.critical_masses)
    print(f"the paper's criterion gives {agree} of Table S3's {len(TABLE_S3)} values; the report's Table S3 shows "
          f"them: {shown == computed} (the rows not in Table S3 are the data's other conditions)")
    print("the plotter taken literally, with the notebook's windows:")
    groups: dict[tuple[str, int, int, str], dict[int, list[list[float]]]] = {}
    for entry in result.imported:
        named = entry.condition
        if named.majority is None or named.alternative is None or "critical_mass_" not in entry.directory.parent.parent.name:
            continue
        key = (named.model, named.agents, named.memory_length, named.majority)
        groups.setdefault(key, {})[named.committed] = [summary["paper_round_alternative_share"] for summary in entry.summaries]
    for (model, agents, memory, majority), sizes in sorted(groups.items()):
        if not any(sizes):
            continue
        window = NOTEBOOK_WINDOW.get(model, 30)
        verdicts = {size: literal_flips(curves, window) for size, curves in sizes.items()}
        print(f"  {model:<26} N={agents:<3} H={memory}  against {majority}: {smallest_from_which(verdicts)} "
              f"(max_round {window}); Table S3: {TABLE_S3.get((model, agents, memory, majority), '-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
