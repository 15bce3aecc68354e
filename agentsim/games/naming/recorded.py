"""The naming game's questions of a recorded experiment (agentsim.analysis.recorded reads any
game's runs; these read what a naming game records): success and the committed name's share
per population round, productions per round, consensus names, first choices, and every choice
with the memory it was made from.

Fallbacks (decisions no reply gave) are never counted as a model's choice: they are left out of
first choices and of `choices` unless asked for, and counted beside.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...analysis.recorded import RecordedExperiment


@dataclass
class Choice:
    """One decision of an LLM (or rule) agent: the memory it saw and what it played."""

    run: int
    t: int
    agent: int
    memory: tuple[tuple[str | None, str | None, int], ...]
    options: tuple[str, ...]
    action: str | None
    probabilities: dict[str, float] | None = None
    fallback: bool = False  # no reply gave the action: never counted as the model's choice


def success_matrix(experiment: RecordedExperiment) -> np.ndarray:
    """Runs x rounds success rates. A run that stopped early (consensus) keeps its last
    rate afterwards, as the paper's averages do for runs that have converged."""
    return experiment.round_matrix("success_rate")


def alternative_share_matrix(experiment: RecordedExperiment) -> np.ndarray:
    """Runs x rounds share of the committed name among the other agents' productions."""
    return experiment.round_matrix("alternative_share")


def productions(experiment: RecordedExperiment, run: int) -> list[dict[str, int]]:
    """One run's productions of each name per round."""
    return [dict(entry.get("productions") or {}) for entry in experiment.round_stats.get(run, [])]


def consensus_names(experiment: RecordedExperiment) -> list[str | None]:
    return [row["summary"].get("consensus_name") for row in experiment.runs]


def first_choices(experiment: RecordedExperiment, *, kinds: tuple[str, ...] = ("llm",)) -> dict[str, int]:
    """How often each name was answered from an empty memory (a context that lists the
    options only), counted in SQL: the individual-bias samples of any run. Fallbacks are
    not the model's choices and are left out (`first_choice_fallbacks` counts them)."""
    return {action: count for action, count in _first_moves(experiment, kinds).items() if action is not None}


def first_choice_fallbacks(experiment: RecordedExperiment, *, kinds: tuple[str, ...] = ("llm",)) -> tuple[int, int]:
    """(fallbacks, decisions) among the decisions from an empty memory."""
    moves = _first_moves(experiment, kinds)
    return moves.get(None, 0), sum(moves.values())


def _first_moves(experiment: RecordedExperiment, kinds: tuple[str, ...]) -> dict[str | None, int]:
    """Decisions from an empty memory by action; fallbacks under the key None."""
    width = len(experiment.names)
    if not width:
        return {}
    done = {row["run"] for row in experiment.runs}
    marks = ",".join("?" * len(kinds))
    counts: dict[str | None, int] = {}
    for run, action, fallback, count in experiment.store.rows(
            "SELECT d.run, m.action, m.fallback IS 1, COUNT(*) FROM decisions d "
            "JOIN decisions m ON m.run = d.run AND m.t = d.t AND m.agent = d.agent AND m.payoff IS NOT NULL "
            f"JOIN agents a ON a.run = d.run AND a.agent = d.agent AND a.kind IN ({marks}) "
            "WHERE d.attempt = 0 AND length(d.context) = ? GROUP BY d.run, m.action, m.fallback IS 1",
            (*kinds, width)):
        if run in done:
            key = None if fallback else action
            if key is not None or fallback:
                counts[key] = counts.get(key, 0) + count
    return counts


def choices(experiment: RecordedExperiment, *, kinds: tuple[str, ...] = ("llm",), fallbacks: bool = False) -> list[Choice]:
    """Every decision of agents of `kinds` that a reply gave (with `fallbacks`, the
    fallbacks too, marked), with the memory and options it was made from (decoded from
    the first attempt's context) and the action finally played (read once per experiment)."""
    read: dict[tuple[str, ...], list[Choice]] = experiment.memo.setdefault("naming.choices", {})
    cached = read.get(kinds)
    if cached is None:
        cached = read[kinds] = list(_read_choices(experiment, kinds))
    return cached if fallbacks else [choice for choice in cached if not choice.fallback]


def _read_choices(experiment: RecordedExperiment, kinds: tuple[str, ...]) -> Iterator[Choice]:
    scenario = experiment.scenario
    codec = scenario.codec if scenario is not None else None
    if codec is None:
        return
    decoded: dict[str, Any] = {}
    store = experiment.store
    agent_kinds = {(run, agent): kind for run, agent, kind in store.rows("SELECT run, agent, kind FROM agents")}
    done = {row["run"] for row in experiment.runs}
    columns = "run, t, agent, attempt, context, action, payoff, fallback IS 1, probabilities"
    context: str | None = None
    probabilities: str | None = None
    for row in store.rows(f"SELECT {columns} FROM decisions ORDER BY run, t, agent, attempt"):
        run, t, agent, attempt, row_context, action, payoff, fallback = row[:8]
        if run not in done or agent_kinds.get((run, agent)) not in kinds:
            continue
        if attempt == 0:
            context = row_context
            probabilities = row[8]
        if payoff is None or not context:
            continue
        situation = decoded.get(context)
        if situation is None:
            situation = decoded[context] = codec.decode(context)
        yield Choice(run, t, agent, situation.memory, situation.options, action,
                     json.loads(probabilities) if probabilities else None, bool(fallback))
