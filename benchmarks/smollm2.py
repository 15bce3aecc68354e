"""What agentsim reports on a real model is the model's: three checks on SmolLM2-135M-Instruct
(in process, llama.cpp, the answer grammar), each through the command line a user runs.

1. `--sample-locally` against plain sampling: the committed-minority scenario
   (scenarios/critical_mass.py, scaled down: N `--agents`, `--committed` of them committed to Q,
   `--rounds` population rounds) over `--seeds` seeds each way, each with its own response
   cache. Printed: each run's Q share among the non-committed agents' choices (the last 3N
   interactions) and whether it flipped; the mean share with its 95% interval (t) and the flip
   count with its Wilson interval, each way, and whether each lies in the other's interval;
   the calls that reached the model each way (the closing note: the calls saved).
2. A strategy table (scenarios/strategies.py: every memory of interactions 1-3, `--samples`
   decisions each): each configuration's exact P(M) (the mean of the stored distributions of
   its calls) against the sampled share and its exact (Clopper-Pearson) 95% interval, as the
   strategies table prints it, and how many exact values
   lie inside (with 95% intervals, about one line in twenty lies outside by chance alone), and
   inside the family-wise intervals (Bonferroni over the lines: with exact values every line
   lies inside them with probability at least 95%).
3. Fig. 3 without the grammar: the scenario as shipped (unconstrained) must stop at start-up
   with the model-check advice, before any run is recorded.

    python benchmarks/smollm2.py [--only local|strategies|fig3] [--seeds 8] [--work DIR]

Slow by nature: every decision is a real call to a 135M model on the CPU (about 0.3 s to 3 s
each, more on a loaded host). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scipy import stats

from agentsim.analysis.recorded import find_experiments
from agentsim.analysis.stats import proportion_interval
from agentsim.games.naming.recorded import choices
from agentsim.games.naming.strategies import strategy_table

ROOT = Path(__file__).resolve().parent.parent


def agentsim(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentsim", *arguments], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, mean, mean
    spread = math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1)) / math.sqrt(len(values))
    half = float(stats.t.ppf(0.975, len(values) - 1)) * spread
    return mean, mean - half, mean + half


def sample_locally(options: argparse.Namespace, work: Path) -> None:
    common = ["--backend", "local:smollm2", "--set", "constrained_decoding=true", "--set", f"agents={options.agents}",
              "--set", f"committed={options.committed}", "--set", f"max_rounds={options.rounds}",
              "--runs", str(options.seeds), "--no-live"]
    print(f"1. critical mass on SmolLM2 (constrained): N {options.agents}, {options.committed} committed to Q, "
          f"{options.rounds} rounds, seeds 0-{options.seeds - 1}, each way with its own response cache")
    results: dict[str, dict[str, Any]] = {}
    for mode, extra in (("plain", []), ("--sample-locally", ["--sample-locally"])):
        out = work / mode.strip("-")
        started = time.monotonic()
        result = agentsim(str(ROOT / "scenarios" / "critical_mass.py"), *common, *extra, "--out", str(out),
                          "--cache", str(work / f"{mode.strip('-')}.db"))
        wall = time.monotonic() - started
        if result.returncode != 0:
            raise SystemExit(f"{mode}: exit {result.returncode}: {result.stderr.strip().splitlines()[-1:]}")
        runs = json.loads((out / "summary.json").read_text())["runs"]
        usage = [run["usage_by_backend"]["local:smollm2"] for run in runs]
        asked = sum(entry["calls"] - entry["sampled_locally"] - entry["cache_hits"] for entry in usage)
        shares = [run["final_alternative_share"] for run in runs]
        flips = sum(bool(run["flip"]) for run in runs)
        results[mode] = {"shares": shares, "flips": flips, "runs": len(runs), "asked": asked,
                         "drawn": sum(entry["sampled_locally"] for entry in usage),
                         "decisions": sum(entry["calls"] for entry in usage), "wall": wall,
                         "fallbacks": sum(run["fallbacks"] for run in runs)}
        print(f"  {mode}: Q shares {', '.join(f'{share:.3f}' for share in shares)}; flips {flips}/{len(runs)}; "
              f"{asked} calls reached the model for {results[mode]['decisions']} replies, fallbacks "
              f"{results[mode]['fallbacks']}, {wall / 60:.1f} min")
    plain, local = results["plain"], results["--sample-locally"]
    plain_mean, plain_low, plain_high = mean_interval(plain["shares"])
    local_mean, local_low, local_high = mean_interval(local["shares"])
    inside = plain_low <= local_mean <= plain_high and local_low <= plain_mean <= local_high
    print(f"  Q share among the non-committed agents: plain {plain_mean:.3f} [{plain_low:.3f}, {plain_high:.3f}], "
          f"--sample-locally {local_mean:.3f} [{local_low:.3f}, {local_high:.3f}] (95% t intervals): "
          f"{'each inside the other' if inside else 'NOT within each other'}")
    flips = []
    for mode in ("plain", "--sample-locally"):
        low, high = proportion_interval(results[mode]["flips"], results[mode]["runs"])
        flips.append((results[mode]["flips"] / results[mode]["runs"], low, high))
    agree = flips[0][1] <= flips[1][0] <= flips[0][2] and flips[1][1] <= flips[0][0] <= flips[1][2]
    print(f"  flips: plain {plain['flips']}/{plain['runs']} [{flips[0][1]:.2f}, {flips[0][2]:.2f}], --sample-locally "
          f"{local['flips']}/{local['runs']} [{flips[1][1]:.2f}, {flips[1][2]:.2f}] (95% Wilson): "
          f"{'each inside the other' if agree else 'NOT within each other'}")
    print(f"  calls saved on SmolLM2: {plain['asked']} calls plain, {local['asked']} with --sample-locally "
          f"({plain['asked'] / max(1, local['asked']):.2f}x fewer; {local['drawn']} of {local['decisions']} replies drawn "
          f"from a stored distribution without a call)")


def strategies(options: argparse.Namespace, work: Path) -> None:
    configurations = 21
    rounds = -(-configurations * options.samples // options.agents_probe)
    out = work / "strategies"
    print(f"2. strategy table on SmolLM2 (constrained): 21 configurations of interactions 1-3, {options.agents_probe} "
          f"agents x {rounds} rounds (about {options.samples} decisions each)")
    result = agentsim(str(ROOT / "scenarios" / "strategies.py"), "--backend", "local:smollm2", "--set",
                      "constrained_decoding=true", "--set", f"agents={options.agents_probe}", "--set",
                      f"max_rounds={rounds}", "--no-live", "--out", str(out), "--cache", str(work / "strategies.db"))
    if result.returncode != 0:
        raise SystemExit(f"strategies: exit {result.returncode}: {result.stderr.strip().splitlines()[-1:]}")
    strategy_check(out)


def strategy_check(out: Path) -> None:
    """Each configuration's exact P(M) against its sampled share: inside the 95% interval on its
    line (the table's, exact binomial), and inside the family-wise one (each line at 1 - 0.05/lines, Bonferroni: with
    exact values, all lines lie inside with probability at least 95%)."""
    table = strategy_table(find_experiments(out))
    assert table is not None
    rows = table.rows("M")
    family = 1 - 0.05 / len(rows)
    inside = inside_family = 0
    for row in rows:
        exact, low, high = row["p_M"], row["ci_low"], row["ci_high"]
        chosen = round((row["sampled_p_M"] or 0) * row["samples"])
        family_low, family_high = proportion_interval(chosen, row["samples"], confidence=family, method="exact")
        within, within_family = low <= exact <= high, family_low <= exact <= family_high
        inside += within
        inside_family += within_family
        tail = stats.binomtest(chosen, row["samples"], min(max(exact, 0.0), 1.0)).pvalue if row["samples"] else 1.0
        print(f"  {row['interaction']} {row['memory']:<12} P(M)={exact:.3f} ({row['source']}); sampled "
              f"{row['sampled_p_M']:.3f} [{low:.3f}, {high:.3f}] n={row['samples']} fallbacks={row['fallbacks']}: "
              f"{'inside' if within else 'OUTSIDE'} (binomial p={tail:.2g}; family-wise [{family_low:.3f}, "
              f"{family_high:.3f}]{'' if within_family else ' OUTSIDE'})")
    print(f"  {inside} of {len(rows)} exact values inside the sampled 95% interval on their line (about "
          f"{len(rows) * 0.05:.1f} would lie outside by chance with exact values); {inside_family} of {len(rows)} inside "
          f"the family-wise 95% intervals ({family:.4f} each)")
    # Every call at once: the M answered against the sum of the calls' stored P(M) (a sum of
    # independent Bernoullis: mean sum p, variance sum p(1 - p)).
    chances = [(choice.probabilities["M"], choice.action == "M") for experiment in find_experiments(out)
               for choice in choices(experiment) if choice.probabilities]
    expected = sum(chance for chance, _ in chances)
    spread = math.sqrt(sum(chance * (1 - chance) for chance, _ in chances))
    answered = sum(chose for _, chose in chances)
    z = (answered - expected) / spread
    print(f"  all {len(chances)} scored calls: M answered {answered}, expected {expected:.1f} +- {spread:.1f} from the "
          f"stored distributions (z = {z:.2f}, two-sided p = {2 * stats.norm.sf(abs(z)):.2g})")


def fig3_unconstrained(work: Path) -> None:
    out = work / "fig3"
    result = agentsim(str(ROOT / "scenarios" / "critical_mass.py"), "--backend", "local:smollm2", "--no-live",
                      "--out", str(out))
    line = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
    recorded = (out / "summary.json").is_file() and json.loads((out / "summary.json").read_text())["runs"]
    print(f"3. Fig. 3 on SmolLM2 without the grammar: exit {result.returncode}, runs recorded: {len(recorded or [])}")
    print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["local", "strategies", "fig3"], default=None)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--committed", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--samples", type=int, default=20, help="decisions per strategy configuration")
    parser.add_argument("--agents-probe", type=int, default=12)
    parser.add_argument("--work", type=Path, default=None, help="keep the results here (default: a temporary directory)")
    options = parser.parse_args()
    os.environ.setdefault("AGENTSIM_LLAMA_THREADS", "1")
    with tempfile.TemporaryDirectory() as scratch:
        work = options.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        print(f"SmolLM2-135M-Instruct (local:smollm2, llama.cpp in process, {os.environ['AGENTSIM_LLAMA_THREADS']} "
              f"thread(s)); results in {work}")
        if options.only in (None, "fig3"):
            fig3_unconstrained(work)
        if options.only in (None, "strategies"):
            strategies(options, work)
        if options.only in (None, "local"):
            sample_locally(options, work)


if __name__ == "__main__":
    main()
