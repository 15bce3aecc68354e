"""The registry of `python -m agentsim NAME` subcommands and what their parsers share.

A subcommand is a function of its arguments returning an exit code, registered with
`@command(NAME, SUMMARY)` from any module: the framework's own (`report`, `transcript`) in
`agentsim.analysis.commands`, a game family's in its package (`agentsim/games/naming/commands.py`).
A family declares its subcommands by name and summary (`Family(subcommands=...)`): the table
holds a stand-in for each (`declare`) that imports the family's command module when the
subcommand runs, so a scenario run or `--help` imports no command module. The wrapper turns
a `UserError` into one line and exit code 2 and a stopped run into its line and exit code.
Keep a command module light anyway: heavy imports (matplotlib, the runner) go inside each
command.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from .. import interrupts
from ..errors import EXIT_USER_ERROR, RunStopped, UserError
from ..secrets import redact

if TYPE_CHECKING:
    from .recorded import RecordedExperiment

# name -> main(argv) returning an exit code, and a one-line summary for `python -m agentsim --help`
# (else the first line of main's docstring); the command line dispatches to these.
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {}
SUBCOMMAND_HELP: dict[str, str] = {}
_ANSWERED = [0]  # the signals a subcommand's one line has answered


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the fix, with exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USER_ERROR, f"agentsim {self.prog.split()[-1]}: error: {message} (see --help)\n")


def declare(module: str, subcommands: Mapping[str, str]) -> None:
    """Put `subcommands` (name -> summary) in the table without importing `module`, where they
    are registered with `@command`: each imports it when it runs, then runs what registered."""
    for name, summary in subcommands.items():
        if name not in SUBCOMMANDS:
            SUBCOMMANDS[name] = _deferred(name, module)
            SUBCOMMAND_HELP[name] = summary


def _deferred(name: str, module: str) -> Callable[[list[str]], int]:
    def main(argv: list[str]) -> int:
        importlib.import_module(module)
        registered = SUBCOMMANDS[name]
        if registered is main:
            raise RuntimeError(f"the subcommand {name!r} is declared in {module}, which does not register it")
        return registered(argv)
    return main


IMPORT_PREFIX = "import-"  # `import KIND` runs the subcommand `import-KIND` a family registers
# An import is staged beside --out and moved into place whole (agentsim/staging.py): a signal
# anywhere in it, in the reader a family registers included, leaves --out as it was.
IMPORT_STOPPED = "nothing was imported: an import leaves --out as it was until it is whole"


def command(name: str, summary: str | None = None, *, stopped: str | None = None,
            stops_on_signal: bool = False) -> Callable[[Callable[[list[str]], int]], Callable[[list[str]], int]]:
    """Register the decorated function as the subcommand `name` (a later one replaces it);
    without `summary`, the one its family declared stays (`declare`); `stopped`: what a signal
    that stops it leaves, for its one line (by default: nothing recorded changed);
    `stops_on_signal`: a command a signal ends as it should (a server: `watch`), whose own exit
    code stands once it has taken the signal itself."""
    if stopped is None and name.startswith(IMPORT_PREFIX):
        stopped = IMPORT_STOPPED

    def decorate(function: Callable[[list[str]], int]) -> Callable[[list[str]], int]:
        def main(argv: list[str]) -> int:
            signals = len(interrupts.received)
            try:
                code = function(argv)
            except BaseException as error:
                if isinstance(error, KeyboardInterrupt) or len(interrupts.received) > signals:
                    # A signal, wherever it landed: while a module imported (an ImportError), inside a
                    # library, or in the command's own code: one line and 130 / 143, never a traceback.
                    return _interrupted(name, getattr(error, "outcome", None) or stopped)
                if isinstance(error, UserError):
                    print(f"agentsim {name}: error: {redact(str(error))}", file=sys.stderr)
                    return EXIT_USER_ERROR
                if isinstance(error, RunStopped):  # a backend that failed, a budget spent: one line, its exit code
                    print(f"agentsim {name}: {error.status}: {redact(str(error))}", file=sys.stderr)
                    return error.exit_code
                raise
            if not stops_on_signal and len(interrupts.received) > max(signals, _ANSWERED[0]):
                # a signal some library swallowed: still answered
                return _interrupted(name, "it went on to its end (a library held the signal back): what it wrote stands")
            return code
        main.__doc__ = function.__doc__
        SUBCOMMANDS[name] = main
        if summary is not None:
            SUBCOMMAND_HELP[name] = summary
        return main
    return decorate


def _interrupted(name: str, outcome: str | None) -> int:
    """The one line of a subcommand a signal stopped, and its exit code (130 / 143)."""
    _ANSWERED[0] = len(interrupts.received)  # (a subcommand that runs another, `import`, says it once)
    with contextlib.suppress(OSError, ValueError, KeyboardInterrupt):
        print(f"agentsim {name}: interrupted by {interrupts.by()}; "
              f"{outcome or 'nothing recorded was changed (its own output may be incomplete)'}", file=sys.stderr)
    return interrupts.exit_code()


def results_directory(text: str) -> Path:
    """A results directory argument; a UserError when it is not a directory."""
    path = Path(text)
    if not path.is_dir():
        raise UserError(f"'{text}' is not a directory; give the output directory of a run")
    return path


SCENARIO_HELP = ("a scenario file whose classes the recorded runs use (repeatable): agentsim runs no code a results "
                 "directory names, the scenario file recorded there included")


def scenario_option(parser: argparse.ArgumentParser) -> None:
    """`--scenario FILE` (repeatable): the scenario files whose classes recorded runs name."""
    parser.add_argument("--scenario", dest="scenario_files", action="append", default=[], metavar="FILE",
                        help=SCENARIO_HELP)


def recorded(path: Path, scenario_files: list[str], *, keep: bool = True) -> list[RecordedExperiment]:
    """The experiments under `path` (closed unless `keep`), after loading the scenario
    files the user named; a UserError naming what to pass if one's scenario class cannot be
    used safely."""
    from .recorded import find_experiments, load_scenario_files, require_scenarios  # lazy: numpy, only when read

    load_scenario_files(scenario_files)
    experiments = find_experiments(path)
    try:
        require_scenarios(experiments)
    finally:
        if not keep:
            for experiment in experiments:
                experiment.close()
    return experiments
