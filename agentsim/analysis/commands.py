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
from typing import Any

from ..errors import UserError
from ..flags import add_experiment_arguments, experiment_options
from ..games import Family, discover, on_register
from .subcommands import (
    IMPORT_PREFIX,
    IMPORT_STOPPED,
    SUBCOMMAND_HELP,
    SUBCOMMANDS,
    CommandParser,
    command,
    declare,
    recorded,
    results_directory,
    scenario_option,
)

__all__ = ["IMPORT_PREFIX", "SUBCOMMANDS", "SUBCOMMAND_HELP", "estimate_command", "import_runs", "report", "transcript",
           "watch"]

# `import KIND ...` runs the subcommand `import-KIND`, which the family that reads KIND declares.


@command("report", "figures (PNG + CSV) and one HTML report for a results directory")
def report(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim report", description="Figures, CSVs and an HTML report for a results directory.")
    parser.add_argument("directory", help="a run's output directory (searched recursively)")
    parser.add_argument("--out", type=Path, default=None, help="where to write (default: DIR/report)")
    scenario_option(parser)
    options = parser.parse_args(argv)
    directory = results_directory(options.directory)
    from .recorded import read_artifacts  # lazy: numpy, only when a command reads runs

    if not recorded(directory, options.scenario_files, keep=False) and not read_artifacts(directory):  # before matplotlib loads
        raise UserError(f"no runs found under '{directory}'; run a scenario first "
                        f"(python -m agentsim scenarios/naming_game.py --out {directory})")
    from .report import REPORT_HTML, build_report  # lazy: matplotlib, only for a report

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
                        help="only this round, numbered as the game numbers it: a game on the layer (agentsim.gamekit) "
                             "from 1, as its prompts say (Round 1 of 6); other games' population rounds (a month, a "
                             "generation) from 0, as moves().round")
    scenario_option(parser)
    options = parser.parse_args(argv)
    from .transcript import write_transcript  # lazy: numpy, only when a command reads runs

    recorded(results_directory(options.directory), options.scenario_files, keep=False)
    try:
        write_transcript(results_directory(options.directory), sys.stdout, run=options.run, agent=options.agent,
                         round_=options.round_)
    except BrokenPipeError:  # `| head`: the reader has seen enough
        sys.stderr.close()
    return 0


@command("import", "another project's published runs read into a results directory (import KIND SOURCE --out DIR)",
         stopped=IMPORT_STOPPED)
def import_runs(argv: list[str]) -> int:
    """One verb for every reader of published runs: a family declares `import-KIND` and
    `import KIND` finds it, so a new reader needs no edit here. A reader accepts plain data
    only (JSON; pickles of builtin containers, never a global) and records where the runs came from."""
    kinds = sorted(name.removeprefix(IMPORT_PREFIX) for name in SUBCOMMANDS if name.startswith(IMPORT_PREFIX))
    if argv and argv[0] in ("-h", "--help"):
        print("usage: python -m agentsim import KIND SOURCE --out DIR\n\nKIND is one of: "
              + (", ".join(kinds) or "none installed") + "; `import KIND --help` for its options.")
        raise SystemExit(0)  # as every subcommand's --help ends
    if not argv:
        raise UserError(f"name what to import: python -m agentsim import KIND SOURCE --out DIR, KIND one of "
                        f"{', '.join(kinds) or 'none installed'}")
    kind, *rest = argv
    if kind not in kinds:
        raise UserError(f"no importer for '{kind}': KIND is one of {', '.join(kinds) or 'none installed'}")
    return SUBCOMMANDS[IMPORT_PREFIX + kind](rest)


@command("watch", "a web page that follows a results directory while its runs record and after (--port P)",
         stops_on_signal=True)
def watch(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim watch",
                           description="Serve a page on 127.0.0.1 that follows a results directory while its runs record "
                                       "and after they end: each run's figures, charts, calls and status, updated every "
                                       "second; a click on a chart's round shows its prompts and replies. It reads the "
                                       "store only: nothing under DIR is written. A scenario class defined in a file is "
                                       "found from the file the runs recorded, where it is still there; else pass --scenario.")
    parser.add_argument("directory", help="a run's output directory (searched recursively); it may not exist yet: the page "
                                          "waits for the run that records there")
    parser.add_argument("--port", type=int, default=8765, help="the port on 127.0.0.1 (default 8765; 0: any free one)")
    scenario_option(parser)
    options = parser.parse_args(argv)
    if not 0 <= options.port <= 65535:
        raise UserError(f"--port must be from 0 to 65535 (got {options.port})")
    directory = Path(options.directory)
    if directory.exists() and not directory.is_dir():
        raise UserError(f"'{options.directory}' is a file, not a directory; give the output directory of a run "
                        f"(one that does not exist yet is waited for)")
    import asyncio
    import functools

    from ..watch import serve  # lazy: aiohttp's server, only for watch
    from .recorded import load_scenario_files  # lazy: numpy, only when a command reads runs

    load_scenario_files(options.scenario_files)
    try:
        asyncio.run(serve(directory, port=options.port, ready=functools.partial(print, flush=True)))
    except OSError as error:  # the port is taken
        raise UserError(f"cannot listen on 127.0.0.1:{options.port} ({error.strerror}); choose another --port") from None
    except KeyboardInterrupt:
        pass
    return 0


def _declare(family: Family) -> None:
    """A game family's subcommands in the table, its command module imported when one runs."""
    if family.commands and family.subcommands:
        declare(family.commands, family.subcommands)


discover()
on_register(_declare)  # every family found, and any registered later (a notebook's own)


@command("estimate", "what a scenario will cost and take on a backend, before anything is spent")
def estimate_command(argv: list[str]) -> int:
    """The run's own flags that choose what runs (scenario, --backend or --population, --runs,
    --seed, --set, the backends' options and limits; agentsim/flags.py, read into the options
    every front door builds from) and `--timed-calls N`; plays the scenario on the stand-in and
    prints the calls, tokens, cost and wall time (agentsim/estimate.py). `--out DIR` also writes
    DIR/estimate.json, which a run recorded into DIR shows beside what it spent."""
    parser = CommandParser(
        prog="python -m agentsim estimate",
        usage="python -m agentsim estimate SCENARIO.py [--backend SPEC | --population ...] [--runs K] [--set ...] [--out DIR]",
        description="What a scenario will cost and take on a backend before anything is spent: played on the stand-in "
                    "with its real prompts (agentsim/estimate.py).")
    add_experiment_arguments(parser, scenario_help="the scenario file to estimate, e.g. scenarios/naming_game.py",
                             resume=False, execution=False)
    parser.add_argument("--timed-calls", type=int, default=0, metavar="N",
                        help="time N real calls of the backend for its latency, where it answers; they are paid for "
                             "(default 0: the latency is assumed, and no paid API is called)")
    arguments = parser.parse_args(argv)
    if arguments.scenario is None:
        raise UserError("give a scenario file: python -m agentsim estimate scenarios/naming_game.py --backend SPEC")
    if not 0 <= arguments.timed_calls <= 20:
        raise UserError(f"--timed-calls takes 0 to 20 calls (got {arguments.timed_calls})")
    options = experiment_options(arguments)
    from ..estimate import estimate, write  # lazy: the runner and Mesa, only when it runs

    found = estimate(options, timed_calls=arguments.timed_calls)
    print(render_estimate(found.as_dict()))
    if arguments.out is not None:
        print(f"written to {write(found, Path(arguments.out))}; a run with --out {arguments.out} shows it beside what "
              f"it spends")
    return 0


def render_estimate(document: dict[str, Any]) -> str:
    """The estimate as a short table: per run, per backend, the experiment."""
    lines = [f"estimate for {document['scenario']}: {len(document['runs'])} runs, played on the stand-in with the real "
             f"prompts (expected: the stand-in's own stopping and replies; to the end: every run to its last round, every "
             f"reply at max_tokens, re-asks as the stand-in made them)"]
    lines.append(f"{'run':>5} {'seed':>5} {'rounds':>9} {'calls':>9} {'(to end)':>10} {'prompt tok':>11} {'(to end)':>11} "
                 f"{'reply tok':>10} {'(to end)':>10}")
    for run in document["runs"]:
        figures = run["figures"]
        lines.append(f"{run['run']:>5} {run['seed']:>5} {run['rounds']:>4}/{run['max_rounds']:<4} {figures['calls']:>9} "
                     f"{figures['calls_upper']:>10} {figures['prompt_tokens']:>11} {figures['prompt_tokens_upper']:>11} "
                     f"{figures['completion_tokens']:>10} {figures['completion_tokens_upper']:>10}")
    for spec, backend in document["backends"].items():
        figures = backend["figures"]
        cost = ("unpriced" if backend["cost_usd"] is None
                else f"${backend['cost_usd']:.4f} (to the end ${backend['cost_usd_upper']:.4f})")
        price = backend["price"]
        source = f"; price from {price['source']}" if price else ""
        latency = f"{backend['latency_s']:.3g} s a call ({'measured' if backend['latency_measured'] else 'assumed'})"
        lines.append(f"{spec}: {figures['calls']} calls (to the end {figures['calls_upper']}), {figures['prompt_tokens']} "
                     f"prompt + {figures['completion_tokens']} reply tokens, {cost}{source}; {latency}")
    totals = document["totals"]
    cost = ("not estimated (a model has no price)" if document["cost_usd"] is None
            else f"${document['cost_usd']:.4f} (to the end ${document['cost_usd_upper']:.4f})")
    lines.append(f"experiment: {totals['calls']} calls (to the end {totals['calls_upper']}), "
                 f"{totals['prompt_tokens'] + totals['completion_tokens']} tokens (to the end "
                 f"{totals['prompt_tokens_upper'] + totals['completion_tokens_upper']}), cost {cost}, wall time about "
                 f"{_duration(document['wall_s'])} (to the end {_duration(document['wall_s_upper'])})")
    lines.append(f"tokens: {document['tokenizer']}")
    lines.extend(f"note: {note}" for note in document["notes"])
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
