"""The Donor game (cultural evolution) on the laptop model: SmolLM2-135M in process, with
`constrained_decoding`, `bounded_donations` (a donation held to what the donor holds) and
`constrained_texts` (a strategy begins with "My strategy will be"), agentsim's settings for a
model this small. Prints how many strategies and donations could be read, the invalid actions
and the fallbacks, and the wall time.

    python benchmarks/smollm2_donor.py [--agents 4] [--generations 2] [--rounds 2] [--max-tokens 200]
    python benchmarks/smollm2_donor.py --plain      # constrained_decoding alone (the notebook's free amounts)

Needs the `local` extra. Minutes on two free cores; a loaded host takes several times that.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from agentsim.games.evolution import DonorGame
from agentsim.games.evolution.prompts import Task, decode
from agentsim.llm.health import HealthPolicy
from agentsim.llm.specs import BackendOptions
from agentsim.progress import NoView
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.store import Store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plain", action="store_true", help="constrained_decoding alone, as before these settings")
    options = parser.parse_args()
    settings = dict(agents=options.agents, generations=options.generations, rounds=options.rounds, games=1,
                    max_tokens=options.max_tokens, max_reasks=1, constrained_decoding=True,
                    bounded_donations=not options.plain, constrained_texts=not options.plain)
    with tempfile.TemporaryDirectory(prefix="agentsim-smollm2-donor-") as scratch:
        out = Path(scratch) / "out"
        scenario = DonorGame(**settings)
        experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend="local:smollm2", seed=options.seed,
                                                 llm=BackendOptions(cache_path=Path(scratch) / "cache.db",
                                                                    health=HealthPolicy(max_fallback_share=1.0))),
                                NoView())
        started, cpu = time.perf_counter(), time.process_time()
        experiment.open()
        asyncio.run(experiment.run())
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        (run,) = json.loads((out / "summary.json").read_text())["runs"]
        store = Store(out)
        # each decision's first call carries its context; its last row, the move and whether it fell back
        decisions = list(store.rows(
            "SELECT first.context, last.fallback, last.action, last.error FROM decisions last JOIN decisions first "
            "ON first.run = last.run AND first.t = last.t AND first.agent = last.agent AND first.attempt = 0 "
            "WHERE last.run = 1 AND last.action IS NOT NULL"))
        store.close()
    kinds: Counter[str] = Counter()
    read: Counter[str] = Counter()
    for context, fallback, _action, _error in decisions:
        kind = _kind(context)
        kinds[kind] += 1
        read[kind] += not fallback
    generations = run.get("generations") or []
    invalid = sum(generation.get("invalid_actions", 0) for generation in generations)
    donations = sum(generation.get("donor_choices", 0) for generation in generations)
    print(f"SmolLM2-135M, Donor game, {options.agents} agents, {options.generations} generations, {options.rounds} rounds, "
          f"{'constrained_decoding alone' if options.plain else 'bounded_donations and constrained_texts'}: "
          f"run {run['status']}, {wall:.0f} s wall, {cpu:.0f} s CPU")
    for kind in sorted(kinds):
        print(f"  {kind}: {read[kind]} of {kinds[kind]} read")
    print(f"  donations read as choices: {donations}; invalid actions (more than the donor held): {invalid}")
    return 0


def _kind(context: str | None) -> str:
    """A decision's kind: a text task's (strategy, inherit, ...) or a donation."""
    if not context:
        return "?"
    situation = decode(context)
    return situation.kind if isinstance(situation, Task) else "donation"


if __name__ == "__main__":
    raise SystemExit(main())
