"""The dilemma's subcommand of `python -m agentsim` (declared in the family's `__init__`, imported when it runs):

    cooperation DIR     cooperation rate per round and per model, and mean payoffs

It reads the layer's round lines (agentsim/gamekit/presentation.py): the share of C among each
round's choices, all players' and each model's; fallbacks are left out of every rate.
"""

from __future__ import annotations

from typing import Any

from ...analysis.recorded import RecordedExperiment
from ...analysis.subcommands import CommandParser, command, recorded, results_directory, scenario_option
from ...errors import UserError
from .game import COOPERATE, PrisonersDilemma


def cooperation_rows(experiment: RecordedExperiment) -> list[tuple[str, int, int, int, float | None]]:
    """Per model (and "all"): choices, cooperations, the cooperation rate, the mean payoff per
    player-round chosen, fallbacks; over every round of every finished run."""
    totals: dict[str, dict[str, Any]] = {}
    for entries in experiment.round_stats.values():
        for line in entries:
            for model, tally in [("all", line), *sorted((line.get("by_model") or {}).items())]:
                total = totals.setdefault(model, {"choices": 0, "cooperations": 0, "payoff": 0.0, "chose": 0, "fallbacks": 0})
                move = (tally.get("moves") or {}).get("choose") or {}
                total["choices"] += int(move.get("choices", 0))
                total["cooperations"] += round(float((move.get("shares") or {}).get(COOPERATE, 0)) * int(move.get("choices", 0)))
                total["payoff"] += float(tally.get("chosen_payoff") or 0)
                total["chose"] += int(tally.get("chosen_players", 0))
                total["fallbacks"] += int(tally.get("fallbacks", 0))
    single = len(totals) <= 2  # "all" and one model: the same figures, shown once
    return [(model, total["choices"], total["cooperations"], total["fallbacks"],
             total["payoff"] / total["chose"] if total["chose"] else None)
            for model, total in totals.items() if not (single and model != "all")]


@command("cooperation")
def cooperation(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim cooperation",
                           description="Cooperation rate per round and per model, and mean payoffs, of the repeated "
                                       "Prisoner's Dilemma runs under a directory (fallbacks left out of every rate).")
    parser.add_argument("directory", help="a run's output directory (searched recursively)")
    scenario_option(parser)
    options = parser.parse_args(argv)
    experiments = [experiment for experiment in recorded(results_directory(options.directory), options.scenario_files)
                   if experiment.scenario_name == PrisonersDilemma.name and experiment.runs]
    if not experiments:
        raise UserError(f"no Prisoner's Dilemma runs under '{options.directory}'; run "
                        f"python -m agentsim scenarios/prisoners_dilemma.py --out {options.directory}")
    for experiment in experiments:
        runs = len(experiment.runs)
        for model, choices, cooperations, fallbacks, payoff in cooperation_rows(experiment):
            rate = f"{cooperations / choices:.1%}" if choices else "-"
            mean = "-" if payoff is None else f"{payoff:.4g}"
            print(f"{experiment.label} [{model}]: cooperation {rate} ({cooperations} of {choices} choices, {runs} runs), "
                  f"mean payoff {mean}, fallbacks {fallbacks} (left out)")
        for run, entries in experiment.round_stats.items():
            rates = [((line.get("moves") or {}).get("choose") or {}).get("shares", {}).get(COOPERATE) for line in entries]
            print(f"  run {run} by round: " + " ".join("-" if value is None else f"{value:.2f}" for value in rates))
        experiment.close()
    return 0
