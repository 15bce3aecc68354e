"""The command line's flags of an experiment, and how they read into `ExperimentOptions` (the
options every front door builds its configuration from, agentsim/configure.py).

Shared by `python -m agentsim FILE` (agentsim/cli.py) and `python -m agentsim estimate FILE`
(agentsim/analysis/commands.py), so that neither imports the other: the estimate takes the
flags of the experiment it estimates and the backends' (it plays it on the stand-in, once, in
process: no `--resume`, `--add-runs`, executor or checkpoints), and reads them the same way.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .configure import ExperimentOptions
from .llm.cache import DEFAULT_MAX_BYTES
from .llm.health import HealthPolicy
from .llm.limiter import Limits
from .llm.retries import RetryPolicy
from .llm.specs import BackendOptions
from .params import finite_float
from .scenario_files import parse_overrides
from .session import EXECUTORS, LOCAL
from .store import RECORD_LEVELS


def add_experiment_arguments(parser: argparse.ArgumentParser, *, scenario_help: str, resume: bool = True,
                             execution: bool = True) -> None:
    """The scenario and the flags that choose what runs (backends, runs, seed, `--set`, `--out`),
    `--resume` and `--add-runs` (with `resume`), where the runs execute and how often they are
    checkpointed (with `execution`), and the backends' options and health."""
    parser.add_argument("scenario", nargs="?", default=None, help=scenario_help)
    parser.add_argument("--backend", default=None,
                        help="the language model every agent uses: stand-in (default, the built-in rule policy), "
                             "openai:MODEL, anthropic:MODEL, tgi:URL, local:smollm2 (SmolLM2-135M-Instruct in "
                             "process, no download), local:PATH.gguf (llama.cpp), local:HF_ID_OR_PATH (transformers)")
    parser.add_argument("--population", default=None, metavar="SPEC=COUNT,...",
                        help="a mixed-model population, e.g. 'openai:gpt-4o-mini=12,anthropic:claude-3-5-haiku-latest=12' "
                             "(default: the file's POPULATION, else every agent on --backend); labelled stand-ins mix without a key or "
                             "network, to try a mixed population: 'stand-in:a=5,stand-in:b=5'")
    parser.add_argument("--runs", type=int, default=None,
                        help="seeded replicates, run concurrently (default: the file's RUNS, else 1"
                             + ("; with --resume: the recorded count, which only --add-runs changes)" if resume else ")"))
    if resume:
        parser.add_argument("--add-runs", type=int, default=0, metavar="K",
                            help="with --resume: run K more replicates than the experiment recorded")
    parser.add_argument("--seed", type=int, default=None,
                        help="the first replicate's seed; replicate k uses seed+k (default 0"
                             + ("; --resume without a scenario file: the recorded one)" if resume else ")"))
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a scenario parameter (repeatable)")
    parser.add_argument("--out", default=None, help="output directory (default: results/SCENARIO/TIMESTAMP)")
    if resume:
        parser.add_argument("--resume", action="store_true",
                            help="continue the runs recorded in --out (default: the latest); the scenario file, its "
                                 "--set values, the seed and the backend default to the recorded ones, and the number "
                                 "of runs is the recorded one (--add-runs K adds replicates)")
        parser.add_argument("--scenario-changed", action="store_true",
                            help="with --resume: continue with the scenario file as it is now, though its content "
                                 "differs from the file's the runs started with (by default such a resume is refused)")
    if execution:
        parser.add_argument("--checkpoint-seconds", type=finite_float, default=1.0,
                            help="commit recorded rows and a resumable checkpoint at most this often (default 1)")
        parser.add_argument("--record", choices=RECORD_LEVELS, default=None,
                            help="what the runs record: moves (default: every encounter and decision), rounds (the "
                                 "per-round tallies and every encounter of a sample of about 100 agents) or summary "
                                 "(each run's summary); a resume continues at the recorded level; the play and the "
                                 "checkpoints are the same at every level (docs/scale.md)")
        sweep = parser.add_argument_group("where the runs execute")
        sweep.add_argument("--executor", choices=EXECUTORS, default=LOCAL,
                           help="local (default): every run in this process; ray: each run a Ray task, on the cluster at "
                                "--ray-address or a Ray started here (pip install 'agentsim[ray]'; docs/running-a-sweep-on-ray.md)")
        sweep.add_argument("--ray-address", default="", metavar="ADDRESS",
                           help="the Ray cluster to run on, e.g. ray://head:10001 or auto (default: a Ray started in process)")
        sweep.add_argument("--cpus-per-run", type=finite_float, default=1.0, metavar="CPUS",
                           help="CPUs Ray sets aside for each run (default 1; e.g. 0.1 for runs that mostly wait on a model server)")
    _backend_arguments(parser)


def _backend_arguments(parser: argparse.ArgumentParser) -> None:
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


def experiment_options(arguments: argparse.Namespace) -> ExperimentOptions:
    """The options the parsed flags give (those a parser does not offer keep the options' defaults)."""
    offered = {name: getattr(arguments, name) for name in _OPTIONAL if hasattr(arguments, name)}
    return ExperimentOptions(scenario=arguments.scenario, backend=arguments.backend, population=arguments.population,
                             runs=arguments.runs, seed=arguments.seed, overrides=parse_overrides(arguments.overrides),
                             out=arguments.out, llm=backend_options(arguments), **offered)


_OPTIONAL = ("add_runs", "resume", "scenario_changed", "checkpoint_seconds", "record", "executor", "ray_address",
             "cpus_per_run")


def backend_options(arguments: argparse.Namespace) -> BackendOptions:
    """The backend options from the command line (each validates itself: exit 2 on a mistake)."""
    return BackendOptions(
        base_url=arguments.base_url,
        timeout_s=arguments.timeout,
        retry=RetryPolicy(max_attempts=arguments.max_attempts, deadline_s=arguments.deadline),
        limits=Limits(max_in_flight=arguments.max_in_flight, rpm=arguments.rpm, tpm=arguments.tpm,
                      adaptive=not arguments.no_adaptive, queueing_tolerance=None if arguments.no_latency_rule else 1.5),
        cache=not arguments.no_cache,
        cache_path=arguments.cache,
        cache_max_bytes=int(arguments.cache_max_mb * 2**20),
        replay=arguments.replay,
        sample_locally=arguments.sample_locally,
        model_check=not arguments.no_model_check,
        cache_breakpoints=not arguments.no_cache_breakpoints,
        batch=arguments.batch,
        batch_poll_s=arguments.batch_poll,
        max_calls=arguments.max_calls,
        max_cost_usd=arguments.max_cost,
        health=HealthPolicy(probe=not arguments.no_probe, max_consecutive_failures=arguments.max_consecutive_failures,
                            window=arguments.health_window, max_failure_share=arguments.max_failure_share,
                            max_fallback_share=arguments.max_fallback_share),
    )
