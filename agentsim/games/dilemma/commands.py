"""The dilemma's subcommand of `python -m agentsim` (declared in the family's `__init__`, imported when it runs):

    cooperation DIR     cooperation rate per round and per model, and mean payoffs
"""

from __future__ import annotations

from ...analysis.subcommands import CommandParser, command, recorded, results_directory, scenario_option
from ...errors import UserError


@command("cooperation")
def cooperation(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim cooperation",
                           description="Cooperation rate per round and per model, and mean payoffs, of the repeated "
                                       "Prisoner's Dilemma runs under a directory (fallbacks left out of every rate).")
    parser.add_argument("directory", help="a run's output directory (searched recursively)")
    scenario_option(parser)
    options = parser.parse_args(argv)
    from .report import cooperation_by_round, dilemma_experiments, summary_rows

    experiments = dilemma_experiments(recorded(results_directory(options.directory), options.scenario_files))
    if not experiments:
        raise UserError(f"no Prisoner's Dilemma runs under '{options.directory}'; run "
                        f"python -m agentsim scenarios/prisoners_dilemma.py --out {options.directory}")
    for experiment in experiments:
        for label, model, runs, choices, cooperations, rate, payoff, fallbacks in summary_rows(experiment):
            shown = "-" if rate is None else f"{rate:.1%}"
            print(f"{label} [{model}]: cooperation {shown} ({cooperations} of {choices} choices, {runs} runs), "
                  f"mean payoff {payoff}, fallbacks {fallbacks} (left out)")
        for run, row in zip((entry["run"] for entry in experiment.runs), cooperation_by_round(experiment)):
            rates = " ".join("-" if value is None else f"{value:.2f}" for value in row)
            print(f"  run {run} by round: {rates}")
        experiment.close()
    return 0
