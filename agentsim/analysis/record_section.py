"""The report's section on what the runs recorded, for experiments recorded at a level other
than every move (`--record rounds` or `summary`, store.RECORD_LEVELS): which level, what that
keeps, and each run's summary, which every level keeps, so that a report of runs that kept
nothing per round still shows how each one ended."""

from __future__ import annotations

from typing import Any

from ..flat import flatten
from ..store import MOVES, ROUNDS, SAMPLED_AGENTS
from .report import ReportContext, register_section

# The summary's figures shown first, where a run has them (the rest follow in the CSV's order).
_FIRST = ("run", "seed", "status", "stop_reason", "rounds", "interactions", "calls", "fallbacks")
_PER_BACKEND = ("usage_by_backend.", "errors.")  # the usage section's, per backend


def _lighter(context: ReportContext) -> list[Any]:
    return [experiment for experiment in context.experiments if experiment.record != MOVES]


@register_section("record", "What the runs recorded", order=5, applies=lambda context: bool(_lighter(context)))
def record(context: ReportContext) -> None:
    for experiment in _lighter(context):
        if experiment.record == ROUNDS:
            context.note(f"{experiment.label} was recorded with --record rounds: each run's summary, its per-round "
                         f"tallies, and every encounter of a sample of about {SAMPLED_AGENTS} agents (those whose "
                         f"index is a multiple of ceil(N / {SAMPLED_AGENTS})). Figures per round are the whole "
                         f"population's; tables counted from decisions (first choices, strategies, usage by model) "
                         f"are the sample's.")
        else:
            context.note(f"{experiment.label} was recorded with --record summary: each run's summary only (no "
                         f"round, no encounter), shown below; figures per round and tables counted from decisions "
                         f"need --record rounds or moves.")
    rows = [{"experiment": experiment.label} | flatten(summary)
            for experiment in _lighter(context) for summary in experiment.summaries()]
    columns = ["experiment", *[key for key in _FIRST if any(key in row for row in rows)]]
    columns += sorted({key for row in rows for key in row if not key.startswith(_PER_BACKEND)} - set(columns))
    context.add_table("table_run_summaries", "Each run's summary", columns,
                      [[row.get(column) for column in columns] for row in rows],
                      "Every level keeps each run's summary (summary.json's runs), flat: nested keys dotted.")
