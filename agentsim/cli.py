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
import math
import signal
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .analysis.commands import SUBCOMMAND_HELP, SUBCOMMANDS
from .errors import EXIT_USER_ERROR, RunStopped, ScenarioFileError, UserError
from .llm.cache import DEFAULT_MAX_BYTES
from .llm.health import HealthPolicy
from .llm.limiter import Limits
from .llm.retries import RetryPolicy
from .llm.specs import BackendOptions
from .params import finite_float
from .runner import EXECUTORS, LOCAL, RAY, Experiment, ExperimentConfig
from .scenario import Scenario
from .scenario_files import load_scenario, parse_overrides
from .secrets import redact
from .variants import pinned_variants

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


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
    parser.add_argument("scenario", help="a scenario file, e.g. scenarios/critical_mass.py")
    parser.add_argument("--backend", default=None,
                        help="the language model every agent uses: stand-in (default, the built-in rule policy), "
                             "openai:MODEL, anthropic:MODEL, tgi:URL, local:HF_ID_OR_PATH")
    parser.add_argument("--population", default=None, metavar="SPEC=COUNT,...",
                        help="a mixed-model population, e.g. 'openai:gpt-4o-mini=12,anthropic:claude-3-5-haiku-latest=12' "
                             "(default: the file's POPULATION, else every agent on --backend)")
    parser.add_argument("--runs", type=int, default=None, help="seeded replicates, run concurrently (default: the file's RUNS, else 1)")
    parser.add_argument("--seed", type=int, default=0, help="the first replicate's seed; replicate k uses seed+k (default 0)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a scenario parameter (repeatable)")
    parser.add_argument("--out", type=_directory_path, default=None,
                        help="output directory (default: results/SCENARIO/TIMESTAMP)")
    parser.add_argument("--no-live", action="store_true", help="log lines instead of the live view")
    parser.add_argument("--resume", action="store_true", help="continue the runs recorded in --out (default: the latest)")
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
    llm.add_argument("--max-in-flight", type=int, default=32, help="calls in flight per backend, at most (default 32; adapts below it)")
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
    if arguments and arguments[0] in SUBCOMMANDS:
        return SUBCOMMANDS[arguments[0]](arguments[1:])
    options = build_parser().parse_args(arguments)
    try:
        experiment = _prepare(options)
    except UserError as error:
        return _user_error(error)
    except (OSError, sqlite3.Error) as error:  # the output directory: read-only, full, not a directory
        return _user_error(UserError(f"cannot write the output directory ({_reason(error)}); free space or choose "
                                     f"a writable --out DIR"))
    received: list[int] = []
    out = experiment.config.out
    try:
        asyncio.run(_run(experiment, received))
    except UserError as error:
        return _user_error(error)
    except RunStopped as error:
        print(f"agentsim: {error.status}: {redact(str(error))}; everything recorded so far is in {out}; "
              f"continue with --resume --out {out}", file=sys.stderr)
        return error.exit_code
    except (OSError, sqlite3.Error) as error:  # a disk that filled up or turned read-only during the run
        print(f"agentsim: error: cannot write {out} ({_reason(error)}); what was committed before is kept: free space, "
              f"then continue with --resume --out {out}", file=sys.stderr)
        return EXIT_USER_ERROR
    except (KeyboardInterrupt, asyncio.CancelledError):
        by = "SIGTERM" if received and received[-1] == signal.SIGTERM else "Ctrl-C"
        print(f"agentsim: interrupted by {by}; everything recorded so far is in {out}; "
              f"continue with --resume --out {out}", file=sys.stderr)
        return EXIT_TERMINATED if by == "SIGTERM" else EXIT_INTERRUPTED
    return 0


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
    scenario, module = load_scenario(options.scenario)
    overrides = parse_overrides(options.overrides)
    scenario = scenario.with_overrides(overrides)
    runs = options.runs if options.runs is not None else getattr(module, "RUNS", 1)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ScenarioFileError(f"scenario file '{options.scenario}': RUNS must be a whole number >= 1 "
                                f"(got {runs!r}); fix the file or pass --runs")
    population = options.population
    if population is None and options.backend is None:
        population = getattr(module, "POPULATION", None)
        if population is not None and not isinstance(population, str):
            raise ScenarioFileError(f"scenario file '{options.scenario}': POPULATION must be text like "
                                    f"\"openai:gpt-4o-mini=12,anthropic:claude-3-5-haiku-latest=12\" (got "
                                    f"{population!r}); fix the file or pass --population")
    config = ExperimentConfig(
        scenario=scenario,
        variants=pinned_variants(getattr(module, "VARIANTS", ()), overrides),
        out=_output_directory(options, scenario),
        backend=options.backend or "stand-in",
        population=population or "",
        llm=backend_options(options),
        runs=runs,
        seed=options.seed,
        resume=options.resume,
        checkpoint_seconds=options.checkpoint_seconds,
        scenario_file=str(options.scenario),
        executor=options.executor,
        ray_address=options.ray_address,
        cpus_per_run=options.cpus_per_run,
    )
    from .live import LogView, RichView, configure_logging

    live = not options.no_live and sys.stdout.isatty()
    if not live:
        configure_logging()
    experiment = Experiment(config, RichView() if live else LogView())
    experiment.open()
    return experiment


async def _run(experiment: Experiment, received: list[int]) -> None:
    """Run the experiment; SIGINT (Ctrl-C) and SIGTERM both stop it cleanly, once."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)

    def interrupt(number: int) -> None:
        received.append(number)
        for each in signals:  # a second signal is not gentle
            loop.remove_signal_handler(each)
        if task is not None:
            task.cancel()

    for number in signals:
        loop.add_signal_handler(number, interrupt, number)
    try:
        await experiment.run()
    finally:
        for number in signals:
            loop.remove_signal_handler(number)


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
        max_calls=options.max_calls,
        max_cost_usd=options.max_cost,
        health=HealthPolicy(probe=not options.no_probe, max_consecutive_failures=options.max_consecutive_failures,
                            window=options.health_window, max_failure_share=options.max_failure_share,
                            max_fallback_share=options.max_fallback_share),
    )


def _output_directory(options: argparse.Namespace, scenario: Scenario[Any, Any, Any]) -> Path:
    if options.out is not None:
        return options.out
    base = Path("results") / Path(options.scenario).stem  # named after the file: two files of one game stay apart
    if options.resume:
        previous = sorted(path for path in base.glob("*") if path.is_dir()) if base.is_dir() else []
        if not previous:
            raise UserError(f"nothing to resume under {base}; give the output directory with --out DIR")
        return previous[-1]
    return base / time.strftime("%Y%m%d-%H%M%S")


def _directory_path(text: str) -> Path:
    """An argparse type: a directory path, never empty (an empty --out was the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; give a directory, e.g. --out results/mine")
    return Path(text)


def _reason(error: BaseException) -> str:
    return redact(getattr(error, "strerror", None) or str(error) or type(error).__name__)


def _user_error(error: UserError) -> int:
    print(f"agentsim: error: {error}", file=sys.stderr)
    return EXIT_USER_ERROR


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
