"""Individual and collective bias (Flint Ashery et al. 2025, Fig. 2, Fig. S4, S5, S11).

Individual bias is measured on first choices: decisions taken with an empty memory, either in
a `FirstChoiceProbe` run (every decision is one) or the first decision of every agent of
ordinary runs. `sample_first_choices` draws them through the normal backend path (the
scheduler's concurrency, the LLM policy's parsing, re-asks and fallbacks). Collective bias is
the distribution of the names runs reach consensus on. `find_unbiased_pool` draws random
six-character pools until one's first choices are within a Jensen-Shannon distance of uniform
(0.005 in the paper), the test the paper applies before its random-string experiments.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ... import event_loop
from ...analysis.recorded import RecordedExperiment
from ...analysis.stats import BiasTest, bias_test, js_distance_from_uniform
from ...llm.providers import STAND_IN, all_on_the_stand_in
from ...llm.specs import build_backend
from ...model import BackendShare, PopulationModel
from ...params import require
from ...records import EncounterRecord
from . import FirstChoiceProbe, NamingGame, generate_names
from . import recorded as naming_record

PAPER_JS_THRESHOLD = 0.005


def pool_key(experiment: RecordedExperiment) -> tuple[str, tuple[str, ...]]:
    """Experiments are compared when they share a backend and a name pool."""
    return backend_label(experiment), tuple(sorted(experiment.names))


def backend_label(experiment: RecordedExperiment) -> str:
    """The backend, and for the stand-in the settings of its rule (they change its answers).
    Scenarios other than the LLM naming game and its probes (theory baselines, networks) are
    named instead: their agents are rules, or meet differently."""
    if experiment.scenario_name not in (NamingGame.name, *PROBES):
        return experiment.scenario_name
    settings = experiment.standin
    if not all_on_the_stand_in(experiment.backend) or (not settings.get("bias_name") and not settings.get("noise")):
        return experiment.backend
    parts = [f"favours {settings['bias_name']}" if settings.get("bias_name") else "",
             f"bias {settings['bias']}" if settings.get("bias") else "",
             f"noise {settings['noise']}" if settings.get("noise") else ""]
    return f"{experiment.backend} ({', '.join(part for part in parts if part)})"


def first_choice_counts(experiments: Iterable[RecordedExperiment]) -> dict[tuple[str, tuple[str, ...]], Counter[str]]:
    """Choices made with an empty memory, by (backend, name pool), every name counted."""
    counts: dict[tuple[str, tuple[str, ...]], Counter[str]] = {}
    for experiment in experiments:
        if not experiment.names or has_own_section(experiment):
            continue
        tally = counts.setdefault(pool_key(experiment), Counter(dict.fromkeys(experiment.names, 0)))
        tally.update(naming_record.first_choices(experiment))
    return {key: tally for key, tally in counts.items() if sum(tally.values())}


def first_choice_fallbacks(experiments: Iterable[RecordedExperiment]) -> dict[tuple[str, tuple[str, ...]], tuple[int, int]]:
    """(fallbacks, decisions) from an empty memory, by (backend, name pool): the fallback rate
    that goes beside each individual-bias test (whose counts leave fallbacks out)."""
    rates: dict[tuple[str, tuple[str, ...]], tuple[int, int]] = {}
    for experiment in experiments:
        if not experiment.names or has_own_section(experiment):
            continue
        fallbacks, decisions = naming_record.first_choice_fallbacks(experiment)
        before = rates.get(pool_key(experiment), (0, 0))
        rates[pool_key(experiment)] = (before[0] + fallbacks, before[1] + decisions)
    return rates


def individual_bias(experiments: Iterable[RecordedExperiment]) -> dict[tuple[str, tuple[str, ...]], BiasTest]:
    """The bias test of the first choices recorded for each (backend, name pool)."""
    return {key: bias_test(tally) for key, tally in first_choice_counts(experiments).items()}


PROBES = ("individual_bias", "strategies")
# Games with their own report section whose prompts and dynamics are not the paper's naming
# game (SIGN's free-text conditions never have a memory): neither bias applies to them.
OWN_SECTIONS = ("sign",)


def has_own_section(experiment: RecordedExperiment) -> bool:
    """SIGN runs (and subclasses of SignGame under another name, such as the mixed-model
    example: their parameters carry SIGN's `condition` and `lexicon_size`) are reported by
    SIGN's section, one condition at a time, never pooled into the naming game's figures."""
    params = experiment.params
    return experiment.scenario_name in OWN_SECTIONS or ("condition" in params and "lexicon_size" in params)


def is_free_run(experiment: RecordedExperiment) -> bool:
    """A run of the whole population from empty memories, with no committed minority (LLM
    agents or a theory baseline): its consensus is collective bias. Probes and runs on a
    network and SIGN runs (their own report sections) are not."""
    params = experiment.params
    return (experiment.scenario_name not in PROBES and not has_own_section(experiment) and not params.get("majority_name")
            and not params.get("committed") and not params.get("committed_fraction")
            and params.get("topology", "complete") == "complete" and params.get("pairing") != "network"
            and "names" in params)


def collective_bias(experiments: Iterable[RecordedExperiment]) -> dict[tuple[str, tuple[str, ...]], Counter[str]]:
    """How many free runs reached consensus on each name (and how many on none: key '')."""
    counts: dict[tuple[str, tuple[str, ...]], Counter[str]] = {}
    for experiment in experiments:
        if not is_free_run(experiment) or not experiment.runs:
            continue
        tally = counts.setdefault(pool_key(experiment), Counter(dict.fromkeys(experiment.names, 0)))
        for name in naming_record.consensus_names(experiment):
            tally[name or ""] += 1
    return counts


# --- sampling first choices -----------------------------------------------------------------
def sample_first_choices(scenario: NamingGame, *, backend: str = STAND_IN, samples: int = 1000, seed: int = 0,
                         concurrency: int = 64) -> Counter[str | None]:
    """First choices (empty memory) of `scenario`'s agents on `backend` from `samples`
    decisions, asked `concurrency` at a time through the scheduler and the LLM policy, as in
    a run. Fallbacks are not choices: they are counted under None, never under a name."""
    return event_loop.run(_sample(scenario, backend, samples, seed, concurrency))


async def _sample(scenario: NamingGame, backend_spec: str, samples: int, seed: int,
                  concurrency: int) -> Counter[str | None]:
    agents = max(2, min(2 * concurrency, samples + samples % 2))
    rounds = -(-samples // agents)
    probe = FirstChoiceProbe(scenario.params.replace(agents=agents, max_rounds=rounds, stop_at="none",
                                                     pairing="sequential", topology="complete",
                                                     max_in_flight=max(1, concurrency // 2), committed=0,
                                                     committed_fraction=0.0, majority_name=None,
                                                     committed_name=None),
                             standin=scenario.standin).for_experiment(seed)
    tally: Counter[str | None] = Counter(dict.fromkeys(probe.names, 0))

    def count(record: EncounterRecord) -> None:
        fell = {call.agent for call in record.calls if call.fallback}
        for move in record.moves:
            tally[None if move.agent in fell else move.action] += 1

    model_backend = build_backend(backend_spec, rules=probe.standin_part().rules)
    try:
        model = PopulationModel(probe, seed=seed, backends=[BackendShare(model_backend)], on_resolved=count)
        await model.arun()
    finally:
        await model_backend.aclose()
    return tally


@dataclass(frozen=True, kw_only=True)
class PoolSearch:
    """Random-string pools tried until one is unbiased enough."""

    pool_size: int = 2
    samples: int = 2000
    threshold: float = PAPER_JS_THRESHOLD
    max_tries: int = 20
    seed: int = 0
    backend: str = STAND_IN

    def __post_init__(self) -> None:
        require(self.pool_size >= 2, f"pool_size must be at least 2 (got {self.pool_size})")
        require(self.samples >= 10, f"samples must be at least 10 (got {self.samples})")
        require(0 < self.threshold < 1, f"threshold must be in (0, 1) (got {self.threshold})")
        require(self.max_tries >= 1, f"max_tries must be at least 1 (got {self.max_tries})")


@dataclass
class PoolSearchResult:
    pool: tuple[str, ...] | None
    tries: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"pool": list(self.pool) if self.pool else None, "tries": self.tries}


def find_unbiased_pool(search: PoolSearch, scenario: NamingGame | None = None) -> PoolSearchResult:
    """Draw pools of six letters and digits (seeded) and keep the first whose first choices lie
    within `threshold` (Jensen-Shannon distance, base 2) of uniform. Fallbacks are left out of
    the counts (and reported beside them): a pool is kept for the model's choices only."""
    base = scenario or NamingGame()
    result = PoolSearchResult(None)
    for attempt in range(search.max_tries):
        pool = generate_names(search.pool_size, "random", search.seed * 1_000 + attempt)
        candidate = base.with_params(names=pool)
        counts = sample_first_choices(candidate, backend=search.backend, samples=search.samples,
                                      seed=search.seed * 1_000 + attempt)
        chosen = [counts[name] for name in pool]
        # No choice at all (every decision a fallback): no distance to print, nothing kept.
        distance = js_distance_from_uniform(chosen) if sum(chosen) else None
        kept = distance is not None and distance < search.threshold
        result.tries.append({"pool": list(pool), "counts": chosen, "fallbacks": counts[None], "js_distance": distance,
                             "kept": kept})
        if kept:
            result.pool = pool
            break
    return result
