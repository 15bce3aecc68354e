"""Where a decision's time goes: a cProfile of a run, its time split by the part of agentsim it
was spent in (benchmarks/engine.py and benchmarks/scale.py print it).

Each function's own time goes to the part its module belongs to (`BUCKETS`); time spent in the
standard library, SQLite or any other code outside agentsim (`str.format`, `random.sample`,
`executemany`) goes to the agentsim function that called it, shared among its callers by what
each one's calls cost. The profiler slows small functions more than large ones, so the shares
are indicative: a benchmark scales them to its unprofiled CPU time.
"""

from __future__ import annotations

import cProfile
import pstats
from typing import Any

# (part, the paths of the modules that belong to it), first match wins.
BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("recording", ("agentsim/store.py", "agentsim/checkpoints.py", "agentsim/replicates.py")),
    ("codec", ("agentsim/codec.py", "agentsim/games/naming/codec.py", "agentsim/games/naming/answers.py",
               "agentsim/prompts/")),
    ("policy", ("agentsim/policies.py", "agentsim/llm/", "agentsim/games/naming/standin.py", "agentsim/usage.py",
                "agentsim/seeding.py")),
    ("game rules", ("agentsim/games/naming/game.py", "agentsim/games/pairwise.py", "agentsim/games/theory/",
                    "agentsim/records.py", "agentsim/games/naming/situation.py")),
    ("metrics", ("agentsim/games/naming/metrics.py", "agentsim/games/naming/readout.py", "agentsim/progress.py")),
    ("scheduling", ("agentsim/scheduler.py", "agentsim/model.py", "agentsim/agents.py", "agentsim/executors.py",
                    "agentsim/runner.py", "agentsim/session.py", "agentsim/event_loop.py")),
)
_DEPTH = 20  # callers followed out of foreign code before its time counts as "other"


def part_of(function: tuple[str, int, str]) -> str | None:
    """The part of agentsim a profiled function (file, line, name) belongs to, or None."""
    path = function[0]
    for name, paths in BUCKETS:
        if any(part in path for part in paths):
            return name
    return None


def breakdown(profile: cProfile.Profile) -> dict[str, float]:
    """Seconds by part (`BUCKETS`, and "other" for what no agentsim function called)."""
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    totals: dict[str, float] = {}

    def give(function: Any, seconds: float, depth: int = 0) -> None:
        part = part_of(function)
        callers = stats[function][4] if function in stats else {}
        if part is None and callers and depth <= _DEPTH:
            weight = sum(entry[2] + 1e-12 for entry in callers.values())
            for caller, entry in callers.items():
                give(caller, seconds * (entry[2] + 1e-12) / weight, depth + 1)
            return
        totals[part or "other"] = totals.get(part or "other", 0.0) + seconds

    for function, (_, _, own, _, _) in stats.items():
        give(function, own)
    return totals
