"""Per-model results of a mixed population (any game family): each model's decisions, fallbacks,
choices and mean payoff, counted from the store (`Store.by_model`), as a report table.

A family measures more per model where it has more to say (SIGN's early names, the commons'
gains: their own sections); this table is what every family shares.
"""

from __future__ import annotations

from typing import Any

from ..summaries import total_by_model
from .recorded import RecordedExperiment
from .report import ReportContext, register_section

COLUMNS = ["experiment", "scenario", "model", "kind", "runs", "agents", "decisions", "fallbacks", "fallback_rate",
           "answers", "mean_payoff", "choices"]


def experiment_by_model(experiment: RecordedExperiment) -> dict[str, dict[str, Any]]:
    """The experiment's per-model totals over its finished runs (of its grid cell)."""
    counted = experiment.store.by_model()
    return total_by_model([counted.get(row["run"], {}) for row in experiment.runs])


def mixed(experiment: RecordedExperiment) -> bool:
    """Whether the experiment's agents ask more than one model (rules such as a committed
    minority do not make a population mixed)."""
    models = {model for (model,) in experiment.store.rows("SELECT DISTINCT model FROM agents WHERE kind = 'llm'")}
    return len(models) > 1


def choice_shares(choices: dict[str, int]) -> str:
    """'M 60%, Q 40%': each action's share of the model's answers, most chosen first."""
    total = sum(choices.values())
    ordered = sorted(choices.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{action} {count / total:.0%}" for action, count in ordered) if total else ""


def rows(context: ReportContext) -> list[list[Any]]:
    table = []
    for experiment in context.experiments:
        if not experiment.runs or not mixed(experiment):
            continue
        for model, entry in sorted(experiment_by_model(experiment).items()):
            decisions = entry["decisions"]
            table.append([experiment.label, experiment.scenario_name, model, entry["kind"], entry["runs"], entry["agents"],
                          decisions, entry["fallbacks"], round(entry["fallbacks"] / decisions, 4) if decisions else None,
                          entry["answers"], entry["mean_payoff"], choice_shares(entry["choices"])])
    return table


@register_section("by_model", "Mixed populations: results by model", order=85, applies=lambda context: bool(rows(context)))
def by_model(context: ReportContext) -> None:
    context.add_table("table_by_model", "Each model's decisions, choices and payoff in a mixed population", COLUMNS,
                      rows(context),
                      "Counted from the recorded decisions of the finished runs. Choices and mean payoff are over the "
                      "model's own answers: fallbacks (decisions no reply gave) are counted, and left out of both. "
                      "Agents: one run's.")
