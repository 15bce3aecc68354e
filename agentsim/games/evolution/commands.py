"""Cultural evolution's subcommand of `python -m agentsim`: `lineage DIR`, which survivor's
strategy and norms each new agent received (declared in the family's `__init__`, imported when it runs)."""

from __future__ import annotations

from ...analysis.subcommands import CommandParser, command, results_directory


@command("lineage")
def lineage(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim lineage",
                     description="Which survivor's strategy and norms became which new agent's, generation by generation "
                                 "(Donor game, Stag Hunt).")
    parser.add_argument("directory", help="the output directory of a donor_game or stag_hunt run")
    parser.add_argument("--run", type=int, default=None, help="one run (default: all)")
    parser.add_argument("--full", action="store_true", help="print strategies and norms whole, not cut to one line")
    options = parser.parse_args(argv)
    from .report import lineage_lines  # lazy: the report module's matplotlib, not for --help

    for line in lineage_lines(results_directory(options.directory), options.run, full=options.full):
        print(line)
    return 0
