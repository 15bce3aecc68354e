"""Strategy tables: the probability of each choice for each memory configuration (Table 1,
Fig. S8), and how often each configuration occurs in real runs (Fig. S9, S10).

A strategy is measured three ways, best first:
- exactly, from the option distribution a backend scored for the call (the sampler's chance of
  each reply under the answer grammar, llm/scoring.py), stored with the decision
  (`decisions.probabilities`), averaged over the calls from that state (their option orders
  differ, as the sampled calls' do);
- exactly, from the stand-in's rule (`NamingStandIn.probabilities`) when the stand-in ran;
- by sampling: counts of each choice per configuration, with the exact binomial
  (Clopper-Pearson) interval: it keeps at least its 95% coverage near shares of 0 and 1, where
  most configurations of a model that repeats itself sit and where Wilson's falls short, and it
  matches the exact binomial tests the same table prints.

A memory configuration is the sequence of (own, partner) names in the agent's memory, oldest
first; the payoffs follow from the names. Configurations are written `Q,M;M,M` (own,partner
per interaction, `;` between interactions), the paper's `{1: Q,M; 2: M,M}`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from ...analysis.recorded import RecordedExperiment
from ...analysis.stats import bias_test, proportion_interval
from ...llm.providers import all_on_the_stand_in
from . import StrategyProbe
from .bias import pool_key
from .recorded import choices

State = tuple[tuple[str | None, str | None], ...]


def state_of(memory: Iterable[tuple[Any, ...]]) -> State:
    return tuple((entry[0], entry[1]) for entry in memory)


def state_label(state: State) -> str:
    return ";".join(f"{own},{partner}" for own, partner in state) or "(empty)"


@dataclass
class StateStrategy:
    """What was measured for one memory configuration."""

    state: State
    counts: Counter[str] = field(default_factory=Counter)
    probability_sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    probability_calls: int = 0
    exact: dict[str, float] | None = None  # from the stand-in's rule
    fallbacks: int = 0  # decisions from this state that no reply gave: not in `counts`

    @property
    def fallback_rate(self) -> float:
        decisions = self.samples + self.fallbacks
        return self.fallbacks / decisions if decisions else 0.0

    @property
    def samples(self) -> int:
        return sum(self.counts.values())

    def probability(self, name: str) -> float:
        """The best estimate of P(name | state): exact when known, else the sampled share."""
        if self.probability_calls:
            return self.probability_sums.get(name, 0.0) / self.probability_calls
        if self.exact is not None:
            return self.exact.get(name, 0.0)
        return self.counts[name] / self.samples if self.samples else float("nan")

    def interval(self, name: str) -> tuple[float, float]:
        return proportion_interval(self.counts[name], self.samples, method="exact")

    @property
    def source(self) -> str:
        if self.probability_calls:
            return "exact (backend probabilities)"
        if self.exact is not None:
            return "exact (stand-in rule)"
        return "sampled"


@dataclass
class StrategyTable:
    names: tuple[str, ...]
    backend: str
    states: dict[State, StateStrategy]

    def rows(self, focus: str, *, seed: int = 0) -> list[dict[str, Any]]:
        """One row per configuration: P(focus), its interval and samples, by memory length, and
        Table S5's two p-values for two names: p_unbiased (exact binomial against 1/2) and
        p_more_extreme (the share of 10,000 resamples of 70% of the choices more biased than
        observed)."""
        rows = []
        rng = np.random.default_rng(seed)
        for state, strategy in sorted(self.states.items(), key=lambda item: (len(item[0]), state_label(item[0]))):
            low, high = strategy.interval(focus)
            tests = configuration_tests(strategy.counts[focus], strategy.samples, rng) if len(self.names) == 2 else {}
            rows.append({
                "interaction": len(state) + 1,
                "memory": state_label(state),
                f"p_{focus}": round(strategy.probability(focus), 4),
                f"sampled_p_{focus}": round(strategy.counts[focus] / strategy.samples, 4) if strategy.samples else None,
                "ci_low": round(low, 4), "ci_high": round(high, 4),
                "samples": strategy.samples, "fallbacks": strategy.fallbacks,
                "fallback_rate": round(strategy.fallback_rate, 4), "source": strategy.source, **tests,
            })
        return rows

    @property
    def fallback_rate(self) -> float:
        """The share of all decisions that fell back (left out of every probability above)."""
        fallbacks = sum(strategy.fallbacks for strategy in self.states.values())
        decisions = fallbacks + sum(strategy.samples for strategy in self.states.values())
        return fallbacks / decisions if decisions else 0.0

    def interaction_bias(self, focus: str, length: int) -> dict[str, Any] | None:
        """The paper's interaction-level test (Table 1 caption): choices pooled over every
        configuration of a memory length, equally weighted, exact binomial test against 1/2."""
        chosen = [strategy for state, strategy in self.states.items() if len(state) == length]
        if not chosen or len(self.names) != 2:
            return None
        counts: Counter[str] = Counter()
        for strategy in chosen:
            counts.update(strategy.counts)
        total = {name: counts.get(name, 0) for name in self.names}
        if not sum(total.values()):
            return None
        test = bias_test(total)
        return {"interaction": length + 1, "samples": test.samples, f"share_{focus}": test.shares[focus],
                "p_value": test.p_value, "biased": test.biased}


def strategy_table(experiments: Iterable[RecordedExperiment], *, probes_only: bool = True) -> StrategyTable | None:
    """The strategies recorded in `experiments` (strategy probes by default), pooled over the
    experiments that share the first one's backend (and stand-in settings) and name pool."""
    table: StrategyTable | None = None
    key = None
    for experiment in experiments:
        if probes_only and experiment.scenario_name != StrategyProbe.name:
            continue
        scenario = experiment.scenario
        if scenario is None:
            continue
        if table is None:
            key = pool_key(experiment)
            table = StrategyTable(tuple(scenario.names), key[0], {})
        elif pool_key(experiment) != key:
            continue
        rule = _standin_rule(scenario) if all_on_the_stand_in(experiment.backend) else None
        for choice in choices(experiment, fallbacks=True):
            state = state_of(choice.memory)
            strategy = table.states.get(state)
            if strategy is None:
                strategy = table.states[state] = StateStrategy(state)
                if rule is not None:
                    strategy.exact = rule.probabilities(choice)
            if choice.fallback:  # a fallback is not the model's strategy: counted apart
                strategy.fallbacks += 1
                continue
            if choice.action is not None:
                strategy.counts[choice.action] += 1
            if choice.probabilities:
                strategy.probability_calls += 1
                for name, value in choice.probabilities.items():
                    strategy.probability_sums[name] += value
    return table


def configuration_tests(chosen: int, samples: int, rng: np.random.Generator, *, resamples: int = 10_000,
                        fraction: float = 0.7) -> dict[str, float | None]:
    """Table S5 for one configuration: p_unbiased, the exact two-sided binomial test of `chosen`
    of `samples` against 1/2; p_more_extreme, the share of resamples of `fraction` of the
    choices (without replacement: hypergeometric) whose share lies further from 1/2 than the
    observed one."""
    if samples <= 0:
        return {"p_unbiased": None, "p_more_extreme": None}
    p_unbiased = float(stats.binomtest(chosen, samples, 0.5).pvalue)
    size = max(1, round(fraction * samples))
    drawn = rng.hypergeometric(chosen, samples - chosen, size, size=resamples) / size
    observed = abs(chosen / samples - 0.5)
    return {"p_unbiased": p_unbiased, "p_more_extreme": float(np.mean(np.abs(drawn - 0.5) > observed + 1e-12))}


def state_frequencies(experiments: Iterable[RecordedExperiment], *, length: int | None = None) -> Counter[State]:
    """How often each memory configuration was the one an LLM agent decided from in real runs
    (not probes): the circle sizes of Fig. S9 / S10."""
    frequencies: Counter[State] = Counter()
    for experiment in experiments:
        if experiment.scenario_name in (StrategyProbe.name, "individual_bias"):
            continue
        for choice in choices(experiment):
            if length is None or len(choice.memory) == length:
                frequencies[state_of(choice.memory)] += 1
    return frequencies


def _standin_rule(scenario: Any) -> Any:
    rules = [rule for rule in scenario.standin_part().rules if hasattr(rule, "probabilities")]
    return rules[0] if rules else None
