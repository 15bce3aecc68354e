"""The subcommands of `python -m agentsim`, in `SUBCOMMANDS` (which the command line dispatches
to, with `SUBCOMMAND_HELP` for its help). The framework's own are here:

    report DIR              figures, CSVs and the HTML report for DIR's runs
    transcript DIR          a run's prompts and replies (--run, --agent, --round)
    import KIND SOURCE      another project's published runs read into a results directory
    watch DIR               a web page that follows DIR's runs while they record (agentsim/watch.py)

and each game family declares its own (the naming game's `bias`, `strategies`,
`critical-mass`, ...; the commons' `commons-transcript`; cultural evolution's `lineage`):
importing this module discovers every family (agentsim.games.discover) and puts their declared
subcommands in the table, their command modules imported when one runs, so the table is whole.
`agentsim.analysis.subcommands` holds the registry and what parsers share.

Heavy imports (matplotlib, the runner) happen inside each command, so `python -m agentsim`
starts fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UserError
from ..games import discover
from .subcommands import (
    SUBCOMMAND_HELP,
    SUBCOMMANDS,
    CommandParser,
    command,
    declare,
    recorded,
    results_directory,
    scenario_option,
)

__all__ = ["IMPORT_PREFIX", "SUBCOMMANDS", "SUBCOMMAND_HELP", "import_runs", "report", "transcript", "watch"]

# `import KIND ...` runs the subcommand `import-KIND`, which the family that reads KIND declares.
IMPORT_PREFIX = "import-"


@command("report", "figures (PNG + CSV) and one HTML report for a results directory")
def report(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim report", description="Figures, CSVs and an HTML report for a results directory.")
    parser.add_argument("directory", help="a run's output directory (searched recursively)")
    parser.add_argument("--out", type=Path, default=None, help="where to write (default: DIR/report)")
    scenario_option(parser)
    options = parser.parse_args(argv)
    directory = results_directory(options.directory)
    from .recorded import read_artifacts

    if not recorded(directory, options.scenario_files, keep=False) and not read_artifacts(directory):  # before matplotlib loads
        raise UserError(f"no runs found under '{directory}'; run a scenario first "
                        f"(python -m agentsim scenarios/naming_game.py --out {directory})")
    from .report import REPORT_HTML, build_report

    index = build_report(directory, options.out)
    out = options.out or Path(options.directory) / "report"
    print(f"report: {len(index['figures'])} figures, {len(index['tables'])} tables in sections "
          f"{', '.join(index['sections'])}; open {out / REPORT_HTML}")
    return 0


@command("transcript", "a run's prompts and replies, call by call (--run, --agent, --round)")
def transcript(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim transcript",
                     description="A run's prompts and replies, call by call, rebuilt from the store with the scenario's "
                                 "prompt codec and the prompt template stored with the experiment.")
    parser.add_argument("directory", help="a run's output directory (searched recursively)")
    parser.add_argument("--run", type=int, default=None, help="only this run (default: every run)")
    parser.add_argument("--agent", type=int, default=None, help="only this agent's calls")
    parser.add_argument("--round", dest="round_", type=int, default=None,
                        help="only this population round (a month, a generation: the game's round)")
    scenario_option(parser)
    options = parser.parse_args(argv)
    from .transcript import write_transcript

    recorded(results_directory(options.directory), options.scenario_files, keep=False)
    try:
        write_transcript(results_directory(options.directory), sys.stdout, run=options.run, agent=options.agent,
                         round_=options.round_)
    except BrokenPipeError:  # `| head`: the reader has seen enough
        sys.stderr.close()
    return 0


@command("import", "another project's published runs read into a results directory (import KIND SOURCE --out DIR)")
def import_runs(argv: list[str]) -> int:
    """One verb for every reader of published runs: a family declares `import-KIND` and
    `import KIND` finds it, so a new reader needs no edit here. A reader accepts plain data
    only (JSON; pickles of builtin containers, never a global) and records where the runs came from."""
    kinds = sorted(name.removeprefix(IMPORT_PREFIX) for name in SUBCOMMANDS if name.startswith(IMPORT_PREFIX))
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m agentsim import KIND SOURCE --out DIR\n\nKIND is one of: "
              + (", ".join(kinds) or "none installed") + "; `import KIND --help` for its options.")
        return 0 if argv else 2
    kind, *rest = argv
    if kind not in kinds:
        raise UserError(f"no importer for '{kind}': KIND is one of {', '.join(kinds) or 'none installed'}")
    return SUBCOMMANDS[IMPORT_PREFIX + kind](rest)


@command("watch", "a web page that follows a results directory while its runs record and after (--port P)")
def watch(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim watch",
                           description="Serve a page on 127.0.0.1 that follows a results directory while its runs record "
                                       "and after they end: each run's figures, calls and status, updated every second. "
                                       "It reads the store only: nothing under DIR is written.")
    parser.add_argument("directory", help="a run's output directory (searched recursively)")
    parser.add_argument("--port", type=int, default=8765, help="the port on 127.0.0.1 (default 8765; 0: any free one)")
    scenario_option(parser)
    options = parser.parse_args(argv)
    if not 0 <= options.port <= 65535:
        raise UserError(f"--port must be from 0 to 65535 (got {options.port})")
    directory = results_directory(options.directory)
    import asyncio
    import functools

    from ..watch import serve
    from .recorded import load_scenario_files

    load_scenario_files(options.scenario_files)
    try:
        asyncio.run(serve(directory, port=options.port, ready=functools.partial(print, flush=True)))
    except OSError as error:  # the port is taken
        raise UserError(f"cannot listen on 127.0.0.1:{options.port} ({error.strerror}); choose another --port") from None
    except KeyboardInterrupt:
        pass
    return 0


for _family in discover().values():  # every game family's subcommands, its command module imported when one runs
    if _family.commands and _family.subcommands:
        declare(_family.commands, _family.subcommands)
