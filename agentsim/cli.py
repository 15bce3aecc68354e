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
import math
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from . import __version__, event_loop, interrupts
from .analysis.commands import SUBCOMMAND_HELP, SUBCOMMANDS
from .errors import EXIT_USER_ERROR, OutputDirError, RunStopped, ScenarioFileError, UserError
from .llm.cache import DEFAULT_MAX_BYTES
from .llm.health import HealthPolicy
from .llm.limiter import Limits
from .llm.retries import RetryPolicy
from .llm.specs import BackendOptions
from .params import finite_float
from .scenario import Scenario
from .scenario_files import file_population, file_runs, load_scenario, parse_overrides
from .secrets import redact
from .session import (
    EXECUTORS,
    LOCAL,
    RAY,
    ExperimentConfig,
    check_scenario_digest,
    fresh_directory,
    recorded_runs,
    refuse_linked_store,
)
from .variants import pinned_variants

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
    parser.add_argument("scenario", nargs="?", default=None,
                        help="a scenario file, e.g. scenarios/critical_mass.py (with --resume: default, the one "
                             "recorded in --out)")
    parser.add_argument("--backend", default=None,
                        help="the language model every agent uses: stand-in (default, the built-in rule policy), "
                             "openai:MODEL, anthropic:MODEL, tgi:URL, local:smollm2 (SmolLM2-135M-Instruct in "
                             "process, no download), local:PATH.gguf (llama.cpp), local:HF_ID_OR_PATH (transformers)")
    parser.add_argument("--population", default=None, metavar="SPEC=COUNT,...",
                        help="a mixed-model population, e.g. 'openai:gpt-4o-mini=12,anthropic:claude-3-5-haiku-latest=12' "
                             "(default: the file's POPULATION, else every agent on --backend); labelled stand-ins mix without a key or "
                             "network, to try a mixed population: 'stand-in:a=5,stand-in:b=5'")
    parser.add_argument("--runs", type=int, default=None,
                        help="seeded replicates, run concurrently (default: the file's RUNS, else 1; with --resume: "
                             "the recorded count, which only --add-runs changes)")
    parser.add_argument("--add-runs", type=int, default=0, metavar="K",
                        help="with --resume: run K more replicates than the experiment recorded")
    parser.add_argument("--seed", type=int, default=None,
                        help="the first replicate's seed; replicate k uses seed+k (default 0; --resume without a "
                             "scenario file: the recorded one)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a scenario parameter (repeatable)")
    parser.add_argument("--out", type=_directory_path, default=None,
                        help="output directory (default: results/SCENARIO/TIMESTAMP)")
    parser.add_argument("--no-live", action="store_true", help="log lines instead of the live view")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                        help="the log lines (--no-live, or no terminal): text (key=value, default) or json (one JSON "
                             "object per line and event; the last, experiment_ended, gives the outcome)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the runs recorded in --out (default: the latest); the scenario file, its "
                             "--set values, the seed and the backend default to the recorded ones, and the number "
                             "of runs is the recorded one (--add-runs K adds replicates)")
    parser.add_argument("--scenario-changed", action="store_true",
                        help="with --resume: continue with the scenario file as it is now, though its content differs "
                             "from the file's the runs started with (by default such a resume is refused)")
    parser.add_argument("--checkpoint-seconds", type=finite_float, default=1.0,
                        help="commit recorded rows and a resumable checkpoint at most this often (default 1)")
    sweep = parser.add_argument_group("where the runs execute")
    sweep.add_argument("--executor", choices=EXECUTORS, default=LOCAL,
                       help="local (default): every run in this process; ray: each run a Ray task, on the cluster at "
                            "--ray-address or a Ray started here (pip install 'agentsim[ray]'; docs/running-a-sweep-on-ray.md)")
    sweep.add_argument("--ray-address", default="", metavar="ADDRESS",
                       help="the Ray cluster to run on, e.g. ray://head:10001 or auto (default: a Ray started in process)")
    sweep.add_argument("--cpus-per-run", type=finite_float, default=1.0, metavar="CPUS",
                       help="CPUs Ray sets aside for each run (default 1; e.g. 0.1 for runs that mostly wait on a model server)")
    llm = parser.add_argument_group("language-model backends")
    llm.add_argument("--base-url", default=None,
                     help="an OpenAI- or Anthropic-compatible server for openai:/anthropic: specs, e.g. http://gpu-box:8000/v1 (vLLM)")
    llm.add_argument("--max-in-flight", type=int, default=Limits.max_in_flight,
                     help=f"calls in flight per backend, at most (default {Limits.max_in_flight}; adapts below it)")
    llm.add_argument("--rpm", type=finite_float, default=None, help="requests per minute per backend, at most")
    llm.add_argument("--tpm", type=finite_float, default=None, help="tokens per minute per backend, at most")
    llm.add_argument("--no-adaptive", action="store_true", help="keep the in-flight cap fixed (no shrinking on 429, overload or queueing)")
    llm.add_argument("--no-latency-rule", action="store_true",
                     help="adapt the in-flight cap to refusals only, not to latency showing the server queueing")
    llm.add_argument("--timeout", type=finite_float, default=60.0, help="seconds per attempt (default 60)")
    llm.add_argument("--max-attempts", type=int, default=8, help="attempts per call, retries included (default 8)")
    llm.add_argument("--deadline", type=finite_float, default=300.0, help="seconds per call, retries included (default 300)")
    llm.add_argument("--cache", type=Path, default=None, metavar="PATH",
                     help="the response cache database (default: responses.db in the user's cache directory)")
    llm.add_argument("--cache-max-mb", type=finite_float, default=DEFAULT_MAX_BYTES / 2**20, metavar="MB",
                     help="bound on the response cache's file: the answers least recently used go first, never "
                          "one this run used (default 2048)")
    llm.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    llm.add_argument("--replay", action="store_true", help="answer every call from the cache; a miss is an error")
    llm.add_argument("--sample-locally", action="store_true",
                     help="answer a prompt whose exact option distribution the model gave before by a seeded draw "
                          "from it, without a call (llama.cpp in process, with the answer grammar; docs/backends.md)")
    llm.add_argument("--no-model-check", action="store_true",
                     help="skip the start-up check that an in-process model's replies can be read at all")
    llm.add_argument("--batch", action="store_true",
                     help="a scenario whose calls are independent (the bias and strategy probes): ask them through the "
                          "provider's batch API at half price, answered within hours (openai:, anthropic:)")
    llm.add_argument("--batch-poll", type=finite_float, default=30.0, metavar="S",
                     help="seconds between looks at a submitted batch (default 30)")
    llm.add_argument("--no-cache-breakpoints", action="store_true",
                     help="Anthropic: send no prompt-cache breakpoint (by default the shared system text is marked, "
                          "where long enough, and read back at a tenth of the input price)")
    llm.add_argument("--max-calls", type=int, default=None,
                     help="send at most this many requests, retries and the start-up probe included (exit 4 when spent)")
    llm.add_argument("--max-cost", type=finite_float, default=None,
                     help="stop the experiment before a request could make the calls cost more than this many US dollars")
    health = parser.add_argument_group("run health (a backend that cannot serve the run stops it: exit 3)")
    health.add_argument("--no-probe", action="store_true",
                        help="skip the start-up probe (one tiny request before a backend's first)")
    health.add_argument("--max-consecutive-failures", type=int, default=HealthPolicy.max_consecutive_failures,
                        metavar="N", help="stop after N failed requests in a row, retries included (default %(default)s)")
    health.add_argument("--max-failure-share", type=finite_float, default=HealthPolicy.max_failure_share, metavar="F",
                        help="stop when more than this share of the last --health-window requests failed, retries "
                             "included (default %(default)s; 1: never)")
    health.add_argument("--max-fallback-share", type=finite_float, default=HealthPolicy.max_fallback_share, metavar="F",
                        help="stop when more than this share of the last --health-window decisions fell back "
                             "(default %(default)s; 1: never)")
    health.add_argument("--health-window", type=int, default=HealthPolicy.window, metavar="N",
                        help="requests and decisions the shares are taken over (default %(default)s; from 10 on, "
                             "a share far over its limit stops the run before the window fills)")
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
        runs = experiment.config.runs  # what --resume continues, no more (--add-runs K adds)
        message = (f"agentsim: interrupted by {interrupts.by()}; everything recorded so far is in {out}; "
                   f"continue its {runs} run{'s' if runs != 1 else ''} with --resume --out {out}")
    conclude = getattr(experiment.view, "conclude", None)
    try:
        if conclude is not None:  # the summary and the next step (a log line: experiment_ended)
            conclude(outcome=outcome, exit_code=code, out=str(out), message=message,
                     runs=[experiment.summaries[run] for run in sorted(experiment.summaries)])
        from .live import LogView

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


def _prepare(options: argparse.Namespace) -> Experiment:
    if options.runs is not None and options.runs < 1:
        raise UserError(f"--runs must be at least 1 (got {options.runs})")
    if not (math.isfinite(options.checkpoint_seconds) and 0 <= options.checkpoint_seconds <= 86_400):
        raise UserError(f"--checkpoint-seconds must be a number of seconds from 0 to 86400 (got {options.checkpoint_seconds})")
    if options.backend is not None and options.population is not None:
        raise UserError("--backend and --population both choose the agents' models; give one of them")
    for flag, value in (("--backend", options.backend), ("--population", options.population)):
        if value is not None and not value.strip():
            raise UserError(f"{flag} is empty; name a backend such as stand-in, openai:MODEL or tgi:URL "
                            f"(or drop {flag} for the scenario's default)")
    if (options.ray_address or options.cpus_per_run != 1.0) and options.executor != RAY:
        flag = "--ray-address" if options.ray_address else "--cpus-per-run"
        raise UserError(f"{flag} is for --executor ray; add --executor ray or drop it")
    if options.executor == RAY:
        from .distributed import require_ray

        require_ray()
    out = _output_directory(options)
    recorded = recorded_settings(out) if options.resume else {}
    scenario_file = options.scenario or recorded.get("scenario_file")
    if not scenario_file:
        raise UserError("give a scenario file, e.g. python -m agentsim scenarios/naming_game.py (or --resume --out DIR "
                        "to continue a recorded experiment)")
    if options.scenario is None and not Path(scenario_file).is_file():
        raise ScenarioFileError(f"the scenario file recorded in {out}, '{scenario_file}', is not there any more; name "
                                f"it: python -m agentsim FILE --resume --out {out}")
    if options.scenario_changed and not options.resume:
        raise UserError("--scenario-changed continues a recorded experiment with its edited scenario file: add "
                        "--resume --out DIR, or drop it")
    if options.resume:  # before the file runs: a resume runs the file its runs started with
        check_scenario_digest(recorded, scenario_file, out=out, changed=options.scenario_changed)
    scenario, module = load_scenario(scenario_file)
    overrides = parse_overrides(options.overrides)
    if options.scenario is None:  # the recorded experiment's settings, where the command line gives none
        scenario = _with_recorded(scenario, recorded, overrides)
    scenario = scenario.with_overrides(overrides)
    if options.add_runs and options.runs is not None:
        raise UserError(f"--runs and --add-runs both set the number of runs; with --resume give --add-runs "
                        f"{options.add_runs} alone")
    if options.add_runs and not options.resume:
        raise UserError("--add-runs adds replicates to a recorded experiment: add --resume --out DIR, or give the "
                        "number of runs with --runs")
    if options.add_runs < 0:
        raise UserError(f"--add-runs must be at least 1 (got {options.add_runs})")
    population, backend = options.population, options.backend
    if options.scenario is None and population is None and backend is None:
        population, backend = _recorded_backend(recorded)
    if population is None and backend is None:
        population = file_population(module, scenario_file, "pass --population")
    variants = pinned_variants(getattr(module, "VARIANTS", ()), overrides)
    if options.scenario is None and "variants" in recorded:
        variants = pinned_variants(recorded["variants"], overrides)
    seed = options.seed if options.seed is not None else int(recorded.get("seed", 0)) if options.scenario is None else 0
    runs = options.runs if options.runs is not None else file_runs(module, scenario_file, "pass --runs")
    per_cell = recorded_runs(recorded, max(1, len(variants)), out) if options.resume else None
    if options.runs is None and per_cell is not None:
        # The recorded count, never the file's RUNS (a resume continues what was recorded);
        # `runs` counts each variant's replicates, the store all of them.
        runs = per_cell + options.add_runs
    config = ExperimentConfig(
        scenario=scenario,
        variants=variants,
        out=out,
        backend=backend or "stand-in",
        population=population or "",
        llm=backend_options(options),
        runs=runs,
        seed=seed,
        resume=options.resume,
        add_runs=options.add_runs,
        checkpoint_seconds=options.checkpoint_seconds,
        scenario_file=str(Path(scenario_file).resolve()),  # absolute: analysis names it from any directory
        executor=options.executor,
        ray_address=options.ray_address,
        cpus_per_run=options.cpus_per_run,
        scenario_changed=options.scenario_changed,
    )
    from .live import LogView, RichView, configure_logging
    from .runner import Experiment

    live = not options.no_live and sys.stdout.isatty()
    if not live:
        configure_logging(options.log_format)
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


def backend_options(options: argparse.Namespace) -> BackendOptions:
    """The backend options from the command line (each validates itself: exit 2 on a mistake)."""
    return BackendOptions(
        base_url=options.base_url,
        timeout_s=options.timeout,
        retry=RetryPolicy(max_attempts=options.max_attempts, deadline_s=options.deadline),
        limits=Limits(max_in_flight=options.max_in_flight, rpm=options.rpm, tpm=options.tpm,
                      adaptive=not options.no_adaptive, queueing_tolerance=None if options.no_latency_rule else 1.5),
        cache=not options.no_cache,
        cache_path=options.cache,
        cache_max_bytes=int(options.cache_max_mb * 2**20),
        replay=options.replay,
        sample_locally=options.sample_locally,
        model_check=not options.no_model_check,
        cache_breakpoints=not options.no_cache_breakpoints,
        batch=options.batch,
        batch_poll_s=options.batch_poll,
        max_calls=options.max_calls,
        max_cost_usd=options.max_cost,
        health=HealthPolicy(probe=not options.no_probe, max_consecutive_failures=options.max_consecutive_failures,
                            window=options.health_window, max_failure_share=options.max_failure_share,
                            max_fallback_share=options.max_fallback_share),
    )


def _output_directory(options: argparse.Namespace) -> Path:
    if options.out is not None:
        return Path(options.out)
    if options.scenario is None and not options.resume:
        raise UserError("give a scenario file, e.g. python -m agentsim scenarios/naming_game.py (or --resume --out DIR "
                        "to continue a recorded experiment)")
    if options.scenario is None:
        raise UserError("--resume without a scenario file needs the output directory: --resume --out DIR")
    base = Path("results") / Path(options.scenario).stem  # named after the file: two files of one game stay apart
    if options.resume:
        previous = sorted(path for path in base.glob("*") if path.is_dir()) if base.is_dir() else []
        if not previous:
            raise UserError(f"nothing to resume under {base}; give the output directory with --out DIR")
        return previous[-1]
    return fresh_directory(base)


def recorded_settings(out: Path) -> dict[str, Any]:
    """What the experiment in `out` recorded (scenario file, parameters, seed, backend), for a
    resume, read without changing anything under `out` (`Store.read_only`: a damaged store, or
    one that records no experiment, is refused here in its own words); empty when there is no
    database (the session then says so)."""
    from .store import DATABASE, Store

    refuse_linked_store(out)  # (before reading it: never through a link into another directory)
    if not (out / DATABASE).is_file():
        return {}
    with Store.read_only(out, resume=True) as store:
        recorded = store.experiment() if store.has_tables else {}
    if "scenario" not in recorded:
        raise OutputDirError(f"nothing to resume: {out / DATABASE} records no experiment; drop --resume")
    return recorded


def _with_recorded(scenario: Scenario[Any, Any, Any], recorded: dict[str, Any],
                   overrides: dict[str, str]) -> Scenario[Any, Any, Any]:
    """The scenario file's scenario with the recorded parameters and stand-in settings where
    they differ from the file's (what `--set` gave when the runs started)."""
    params, settings = scenario.params.as_dict(), scenario.standin.as_dict()
    changes = {key: value for key, value in (recorded.get("params") or {}).items()
               if key in params and params[key] != value and key not in overrides}
    standin = {key: value for key, value in (recorded.get("standin") or {}).items()
               if key in settings and settings[key] != value and f"standin.{key}" not in overrides}
    if not changes and not standin:
        return scenario
    return type(scenario)(scenario.params.replace(**changes), standin=scenario.standin.replace(**standin))


def _recorded_backend(recorded: dict[str, Any]) -> tuple[str | None, str | None]:
    """(population, backend) as the recorded experiment had them."""
    shares = [(str(spec), count) for spec, count in recorded.get("population") or []]
    if len(shares) == 1 and shares[0][1] is None:
        return None, shares[0][0]
    if shares:
        return ",".join(f"{spec}={count}" for spec, count in shares), None
    return None, None


def _directory_path(text: str) -> Path:
    """An argparse type: a directory path, never empty (an empty --out was the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; give a directory, e.g. --out results/mine")
    return Path(text)


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
