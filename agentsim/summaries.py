"""What summary.json adds up over an experiment's runs: the per-model breakdown and the usage
per backend."""

from __future__ import annotations

from typing import Any


def merge_by_model(counted: dict[str, dict[str, Any]], family: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """One run's per-model breakdown: the decisions counted from the store (`Store.by_model`),
    with what the game family measures per model where its summary has a `by_model` (SIGN's
    early name, the commons' gains): then for the models the family names, so that each entry
    has the family's fields."""
    if not family:
        return {label: dict(entry) for label, entry in counted.items()}
    return {label: dict(counted.get(label, {})) | entry for label, entry in family.items() if isinstance(entry, dict)}


def total_by_model(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The experiment's per-model breakdown over its finished runs: decisions, fallbacks,
    answers and choices added up, the mean payoff over every agent-encounter in which the agent
    chose (fallbacks left out: one per answer, but for a game that asks an agent again in an
    encounter), the agents of one run."""
    totals: dict[str, dict[str, Any]] = {}
    for run in runs:
        for label, entry in run.items():
            total = totals.setdefault(label, {"kind": entry.get("kind"), "runs": 0, "agents": 0, "decisions": 0,
                                              "fallbacks": 0, "answers": 0, "mean_payoff": None, "choices": {},
                                              "_payoff": 0.0, "_count": 0})
            total["runs"] += 1
            total["agents"] = max(total["agents"], int(entry.get("agents") or 0))
            for key in ("decisions", "fallbacks", "answers"):
                total[key] += int(entry.get(key) or 0)
            weight = int(entry.get("payoff_count", entry.get("answers")) or 0)  # the agent-encounters its mean is over
            if entry.get("mean_payoff") is not None:
                total["_payoff"] += entry["mean_payoff"] * weight
                total["_count"] += weight
            for action, count in (entry.get("choices") or {}).items():
                total["choices"][action] = total["choices"].get(action, 0) + count
    for total in totals.values():
        payoff, count = total.pop("_payoff"), total.pop("_count")
        total["mean_payoff"] = round(payoff / count, 6) if count else None
    return totals

def sum_usage(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The experiment's usage per backend: the runs' counts added (latency stays per run)."""
    totals: dict[str, dict[str, Any]] = {}
    for run in runs:
        for label, usage in (run.get("usage_by_backend") or {}).items():
            total = totals.setdefault(label, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                              "cached_prompt_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.0,
                                              "cache_hits": 0, "retries": 0, "errors": {}})
            for key in ("calls", "prompt_tokens", "completion_tokens", "cached_prompt_tokens", "cache_write_tokens",
                        "cost_usd", "cache_hits", "retries"):
                total[key] += usage.get(key, 0)
            for kind, count in (usage.get("errors") or {}).items():
                total["errors"][kind] = total["errors"].get(kind, 0) + count
    for total in totals.values():
        total["cost_usd"] = round(total["cost_usd"], 6)
    return totals


