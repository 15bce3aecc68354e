"""The command line: `python -m agentsim SCENARIO.py [options]`.

Exit codes (every one but 0 comes with one line on stderr saying why and what to do):

    0    every run done
    1    an unexpected failure (a bug: the traceback is printed)
    2    a user error: a bad flag, parameter, scenario file, backend spec or key, an output
         directory that cannot be used, a damaged database; nothing recorded is changed
    3    a backend failed: its start-up probe, a call that failed for good (its retries or its
         --deadline spent), its circuit breaker, or a request it refuses (HTTP 4xx); or a run's
         decisions are mostly fallbacks; the runs are recorded as `failed` and `--resume`
         continues once it is fixed
    4    the budget (--max-calls, --max-cost) is spent: the runs are recorded as `stopped` with
         their open encounters; `--resume` with a higher budget continues exactly
    130  interrupted by Ctrl-C (SIGINT), 143 by SIGTERM: runs recorded as `interrupted`,
         `--resume` continues
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import errno
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from . import event_loop, interrupts
from .analysis.commands import SUBCOMMAND_HELP, SUBCOMMANDS
from .configure import configure
from .errors import EXIT_USER_ERROR, RunStopped, UserError
from .flags import add_experiment_arguments, experiment_options
from .secrets import redact
from .version import __version__

if TYPE_CHECKING:  # the runner brings the population model and Mesa (with pandas, scipy): a run imports it
    from .runner import Experiment

LOG_FORMATS = ("text", "json")  # --log-format
NOTHING_STARTED = "it stopped before any run started; no run was recorded or changed"


def _subcommands_help() -> str:
    lines = ["subcommands (python -m agentsim NAME --help for each):"]
    for name in sorted(SUBCOMMANDS):
        summary = SUBCOMMAND_HELP.get(name) or (SUBCOMMANDS[name].__doc__ or "").strip().split("\n")[0]
        lines.append(f"  {name:<19} {summary}")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, naming the fix, and exit 2 (argparse prints usage on two lines)."""
        self.exit(EXIT_USER_ERROR, f"agentsim: error: {message} (see python -m agentsim --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m agentsim",
        usage="python -m agentsim SCENARIO.py [options]\n       python -m agentsim SUBCOMMAND [arguments]",
        description="Run a scenario file: a population of LLM agents (or the built-in stand-in) meeting and playing; "
                    "or analyse recorded runs with a subcommand (listed below).",
        epilog=_subcommands_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentsim {__version__}")
    add_experiment_arguments(parser, scenario_help="a scenario file, e.g. scenarios/critical_mass.py (with --resume: "
                                                   "default, the one recorded in --out)")
    view = parser.add_argument_group("what the command shows")
    view.add_argument("--no-live", action="store_true", help="log lines instead of the live view")
    view.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                      help="the log lines (--no-live, or no terminal): text (key=value, default) or json (one JSON "
                           "object per line and event; the last, experiment_ended, gives the outcome)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    started: dict[str, Path] = {}
    try:
        try:
            return _main(arguments, started)
        finally:
            sys.stdout.flush()  # here, not at exit, so that a reader gone away is caught below
    except BrokenPipeError:  # `... | head -1`: the reader has seen enough; nothing recorded is lost
        silence_stdout()
        return 0
    except KeyboardInterrupt:  # a signal at any other moment (imports, loading, the probe, the last line)
        return _interrupted(started.get("out"))


def _interrupted(out: Path | None) -> int:
    """The one line of a command a signal stopped outside the runs (agentsim/interrupts.py)."""
    where = (f"everything recorded so far is in {out}; continue with --resume --out {out}" if out is not None else
             NOTHING_STARTED)
    with contextlib.suppress(OSError, ValueError, KeyboardInterrupt):
        print(f"agentsim: interrupted by {interrupts.by()}; {where}", file=sys.stderr)
    return interrupts.exit_code()


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit does not print the
    BrokenPipeError again (the recipe of Python's signal documentation)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _main(arguments: list[str], started: dict[str, Path]) -> int:
    if arguments and arguments[0] in SUBCOMMANDS:
        return SUBCOMMANDS[arguments[0]](arguments[1:])
    if arguments and _misspelt_subcommand(arguments[0]):
        (close,) = difflib.get_close_matches(arguments[0], SUBCOMMANDS, n=1)
        return _user_error(UserError(f"unknown subcommand '{arguments[0]}'; did you mean '{close}'? "
                                     f"(python -m agentsim --help lists them)"))
    options = build_parser().parse_args(arguments)
    try:
        experiment = _prepare(options)
    except UserError as error:
        return _user_error(error)
    except (OSError, sqlite3.Error) as error:  # the output directory: read-only, full, not a directory
        return _user_error(UserError(f"cannot write the output directory ({_reason(error)}); {_fix(error)}"))
    out = started["out"] = experiment.config.out
    code, outcome, message = 0, "done", ""
    signals_before = len(interrupts.received)
    running = _run(experiment)
    try:
        event_loop.run(running)
    except UserError as error:
        code, outcome, message = EXIT_USER_ERROR, "user_error", f"agentsim: error: {error}"
    except RunStopped as error:
        code, outcome = error.exit_code, error.status
        message = (f"agentsim: {error.status}: {redact(str(error))}; everything recorded so far is in {out}; "
                   f"continue with --resume --out {out}")
    except (OSError, sqlite3.Error) as error:  # a disk that filled up or turned read-only during the run
        code, outcome = EXIT_USER_ERROR, "disk_error"
        message = (f"agentsim: error: cannot write {out} ({_reason(error)}); what was committed before is kept: "
                   f"{_fix(error)}, then continue with --resume --out {out}")
    except (KeyboardInterrupt, asyncio.CancelledError):
        code, outcome = interrupts.exit_code(), "interrupted"
    finally:
        running.close()  # a signal before the loop started it: no "never awaited" warning on stderr
    if outcome == "done" and len(interrupts.received) > signals_before:
        # A signal that came as the runs were ending: the task's cancellation found nothing left
        # to stop, so the runs finished; the signal is still answered as every other one.
        code, outcome = interrupts.exit_code(), "interrupted"
    if outcome == "interrupted":
        runs = experiment.config.replicates  # what --resume continues, no more (--add-runs K adds)
        message = (f"agentsim: interrupted by {interrupts.by()}; everything recorded so far is in {out}; "
                   f"continue its {runs} run{'s' if runs != 1 else ''} with --resume --out {out}")
    conclude = getattr(experiment.view, "conclude", None)
    try:
        if conclude is not None:  # the summary and the next step (a log line: experiment_ended)
            conclude(outcome=outcome, exit_code=code, out=str(out), message=message,
                     runs=[experiment.summaries[run] for run in sorted(experiment.summaries)])
        from .live import LogView  # lazy: rich; loaded by the run already

        json_lines = options.log_format == "json" and isinstance(experiment.view, LogView)
        if message and not json_lines:  # last, so that a failure ends with its one line (JSON: in experiment_ended)
            print(message, file=sys.stderr)
    except BrokenPipeError:  # nobody reads any more: the exit code still says how it ended
        silence_stdout()
    return code


def _misspelt_subcommand(word: str) -> bool:
    """A first argument that is no file and reads like a subcommand (`reprot`): not a scenario."""
    return (not word.startswith("-") and not word.endswith(".py") and not Path(word).exists()
            and bool(difflib.get_close_matches(word, SUBCOMMANDS, n=1)))


def _prepare(arguments: argparse.Namespace) -> Experiment:
    """The experiment the flags describe, built as every front door builds it, and opened."""
    config = configure(experiment_options(arguments))
    from .live import LogView, RichView, configure_logging  # lazy: rich, only for a run
    from .runner import Experiment  # lazy: the population model and Mesa, only for a run

    live = not arguments.no_live and sys.stdout.isatty()
    if not live:
        configure_logging(arguments.log_format)
    experiment = Experiment(config, RichView() if live else LogView())
    experiment.open()
    return experiment


async def _run(experiment: Experiment) -> None:
    """Run the experiment; the first SIGINT (Ctrl-C) or SIGTERM stops it cleanly
    (agentsim/interrupts.py: the runs record it, summary.json is written)."""
    task = asyncio.current_task()
    assert task is not None
    with interrupts.cancelling(task):
        await experiment.run()


def _reason(error: BaseException) -> str:
    return redact(getattr(error, "strerror", None) or str(error) or type(error).__name__)


def _fix(error: BaseException) -> str:
    """What to do about an OSError writing the output directory, by its cause: only a full
    disk is fixed by freeing space."""
    number = getattr(error, "errno", None)
    if number == errno.ENAMETOOLONG:
        return "choose a shorter --out path"
    if number in (errno.ENOSPC, errno.EDQUOT):
        return "free space"
    if number in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "choose a writable --out DIR"
    return "free space or choose a writable --out DIR"


def _user_error(error: UserError) -> int:
    print(f"agentsim: error: {error}", file=sys.stderr)
    return EXIT_USER_ERROR


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
