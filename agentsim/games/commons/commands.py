"""The commons' subcommand of `python -m agentsim`: `commons-transcript DIR`, a GovSim run
month by month (declared in the family's `__init__`, imported when it runs)."""

from __future__ import annotations

from ...analysis.recorded import find_experiments
from ...analysis.subcommands import CommandParser, command, results_directory
from ...errors import UserError
from .transcript import transcript


@command("commons-transcript")
def commons_transcript(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim commons-transcript",
                     description="A GovSim commons run's month by month: harvests, discussion, agreed limit, insights.")
    parser.add_argument("directory", help="a commons run's output directory")
    parser.add_argument("--run", type=int, default=1, help="which run (default 1)")
    options = parser.parse_args(argv)
    experiments = [experiment for experiment in find_experiments(results_directory(options.directory))
                   if experiment.scenario_name == "commons"]
    if not experiments:
        raise UserError(f"no commons run under '{options.directory}'; run scenarios/commons_fishing.py first")
    experiment = experiments[0]
    try:
        for line in transcript(experiment.store, options.run, str(experiment.params.get("resource", "fishing"))):
            print(line)
    except KeyError as error:
        raise UserError(f"{error.args[0]}; pick one with --run") from None
    finally:
        experiment.close()
    return 0
