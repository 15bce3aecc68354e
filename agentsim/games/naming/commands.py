"""The naming game's subcommands of `python -m agentsim` (declared, with their summaries, in the
family's `__init__`; this module is imported when one of them runs):

    bias DIR                individual bias tests of first choices, and consensus counts
    strategies DIR          the strategy table of strategy-probe runs (Table 1)
    critical-mass FILE      search the critical mass against both conventions of a pair
    unbiased-pool           draw random-string pools until one is unbiased
    comprehension DIR       ask Table S7's questions at a recorded run's states
    check-model             is a model fit for the experiments (readable replies, preference,
                            calibration, comprehension)
    import-ainorms SOURCE   the paper's own runs (AI-norms data/*.zip) as results directories,
                            with the critical mass of each model (`import ainorms SOURCE --out DIR`)

Heavy imports (the runner, scipy) happen inside each command, so `python -m agentsim` starts fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ...analysis.subcommands import CommandParser, command, recorded, results_directory, scenario_option
from ...errors import UserError
from ...llm.choices import SCORING_BACKENDS
from ...llm.limiter import Limits
from ...llm.providers import STAND_IN
from ...llm.specs import BackendOptions
from ...params import finite_float
from ...scenario_files import load_scenario, parse_overrides, scenario_from
from ...staging import import_outcome


@command("bias")
def bias(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim bias", description="Individual bias of first choices and collective bias of consensus.")
    parser.add_argument("directory")
    scenario_option(parser)
    options = parser.parse_args(argv)
    from .bias import (  # lazy: this subcommand's own module (Mesa, scipy), not every naming subcommand's
        collective_bias,
        first_choice_fallbacks,
        individual_bias,
    )

    experiments = recorded(results_directory(options.directory), options.scenario_files)
    tests = individual_bias(experiments)
    fallbacks = first_choice_fallbacks(experiments)
    if not tests:
        raise UserError(f"no first choices (decisions from an empty memory) under {options.directory}; "
                        f"run scenarios/individual_bias.py --out {options.directory}")
    for (backend, pool), test in tests.items():
        counts = ", ".join(f"{name}={count}" for name, count in zip(test.names, test.counts))
        fell, decided = fallbacks.get((backend, pool), (0, 0))
        print(f"individual {backend} [{' '.join(pool)}]: {counts}; {test.test} p={test.p_value:.4g}, "
              f"JS distance={test.js_distance:.4g} (base 2); {'biased' if test.biased else 'not biased'} at 5%; "
              f"fallbacks {fell} of {decided} ({fell / decided if decided else 0:.1%}, left out)")
    for (backend, pool), tally in collective_bias(experiments).items():
        counts = ", ".join(f"{name or '(none)'}={count}" for name, count in tally.most_common())
        print(f"collective {backend} [{' '.join(pool)}]: {counts}")
    return 0


@command("strategies")
def strategies(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim strategies", description="Strategy table from strategy-probe runs.")
    parser.add_argument("directory")
    parser.add_argument("--name", default=None, help="the name whose probability is shown (default: the pool's last)")
    parser.add_argument("--exact", action="store_true",
                        help="require exact probabilities for every configuration (the backend's scored option "
                             "distributions, or the stand-in's rule); refuse when any is only sampled")
    scenario_option(parser)
    options = parser.parse_args(argv)
    from .strategies import strategy_table  # lazy: this subcommand's own module (Mesa, scipy), not every naming subcommand's

    table = strategy_table(recorded(results_directory(options.directory), options.scenario_files))
    if table is None or not table.states:
        raise UserError(f"no strategy-probe runs under {options.directory}; run scenarios/strategies.py --out {options.directory}")
    focus = options.name or table.names[-1]
    if focus not in table.names:
        raise UserError(f"--name {focus} is not in the pool {', '.join(table.names)}")
    sampled_only = sum(strategy.source == "sampled" for strategy in table.states.values())
    if options.exact and sampled_only:
        raise UserError(f"{sampled_only} of {len(table.states)} configurations have no exact probability: backend "
                        f"'{table.backend}' stored no scored option distribution (docs/backends.md); run the probe on "
                        f"{SCORING_BACKENDS} with --set constrained_decoding=true, or drop --exact")
    for row in table.rows(focus):
        tests = f" p_unbiased={row['p_unbiased']:.3g} p_more_extreme={row['p_more_extreme']:.3g}" if "p_unbiased" in row else ""
        sampled = "-" if row[f"sampled_p_{focus}"] is None else f"{row[f'sampled_p_{focus}']:.3f}"
        print(f"{row['interaction']:>2} {row['memory']:<30} P({focus})={row[f'p_{focus}']:.3f} ({row['source']}); "
              f"sampled {sampled} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] n={row['samples']}{tests}"
              f" fallbacks={row['fallbacks']}")
    print(f"fallback rate {table.fallback_rate:.1%} (fallbacks are left out of every probability above)")
    if sampled_only:
        print(f"{sampled_only} of {len(table.states)} configurations are sampled only: backend '{table.backend}' stored "
              f"no exact option distribution for them (docs/backends.md)")
    return 0


@command("critical-mass")
def critical_mass(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim critical-mass",
                     description="Smallest committed minority that flips each convention of a pair.")
    parser.add_argument("scenario", help="a naming-game scenario file with two names (e.g. scenarios/critical_mass_search.py)")
    parser.add_argument("--out", type=Path, required=True, help="directory for the search (finished runs are reused)")
    parser.add_argument("--majority", default=None, help="the convention to overturn first (default: the file's majority_name)")
    parser.add_argument("--alternative", default=None)
    parser.add_argument("--runs", type=int, default=None, help="runs per size (default: the file's RUNS, as for a run)")
    parser.add_argument("--share", type=finite_float, default=1.0, help="share of runs that must flip (default 1)")
    parser.add_argument("--max-rounds", type=int, default=30, help="population rounds allowed to flip (default 30)")
    parser.add_argument("--backend", default=STAND_IN)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server for an openai: backend")
    parser.add_argument("--max-in-flight", type=int, default=None,
                        help="calls in flight, at most (default: the limiter's, 128; adapts below it)")
    parser.add_argument("--cache", type=Path, default=None, metavar="PATH", help="the response cache database")
    parser.add_argument("--sample-locally", action="store_true",
                        help="answer prompts whose option distribution is known by a seeded draw from it (no call)")
    parser.add_argument("--parallel", type=int, default=1, metavar="P",
                        help="sizes tried at once (default 1: a bisection; P: a (P+1)-ary search, fewer, longer steps)")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="where the runs execute: local (default) or ray (docs/running-a-sweep-on-ray.md)")
    parser.add_argument("--ray-address", default="", metavar="ADDRESS", help="the Ray cluster (default: a Ray started here)")
    parser.add_argument("--cpus-per-run", type=finite_float, default=1.0, metavar="CPUS", help="CPUs Ray sets aside per run")
    options = parser.parse_args(argv)
    # lazy: this subcommand's own modules (Mesa, scipy), not every naming subcommand's
    from . import NamingGame
    from .critical_mass import CriticalMassSearch, search_both

    overrides = parse_overrides(options.overrides)
    scenario, _ = scenario_from(options.scenario, overrides)
    if not isinstance(scenario, NamingGame) or len(scenario.params.names) != 2:
        raise UserError("critical-mass needs a naming-game scenario with two names (names=(\"Q\", \"M\"))")
    names = scenario.params.names
    majority = options.majority or scenario.params.majority_name or names[-1]
    alternative = options.alternative or next(name for name in names if name != majority)
    # Each size's experiment is built by the one builder (agentsim/configure.py) from these, as
    # `python -m agentsim FILE` builds its own: the file's RUNS, its classes for Ray, the same refusals.
    spec = CriticalMassSearch(scenario=options.scenario, overrides=overrides, majority=majority, alternative=alternative,
                              runs=options.runs, required_share=options.share, max_rounds=options.max_rounds,
                              backend=options.backend, seed=options.seed,
                              llm=BackendOptions(base_url=options.base_url, cache_path=options.cache,
                                                 sample_locally=options.sample_locally,
                                                 limits=Limits() if options.max_in_flight is None
                                                 else Limits(max_in_flight=options.max_in_flight)),
                              parallel=options.parallel, executor=options.executor, ray_address=options.ray_address,
                              cpus_per_run=options.cpus_per_run)
    lines: list[str] = []

    def progress(line: str) -> None:  # stderr: the results below stay alone on stdout
        lines.append(line)
        print(f"critical-mass: {line}", file=sys.stderr, flush=True)

    view = None
    if sys.stdout.isatty() and options.parallel == 1 and options.executor == "local":
        from ...live import RichView  # lazy: rich, only on a terminal

        def view() -> RichView:  # each size's runs live, under the search's latest line
            return RichView(notes=lines[-1:])

    for result in search_both(spec, options.out, progress=progress, view=view):
        found = "none up to N-1" if result.critical_mass is None else f"{result.critical_mass} of {result.agents} ({result.fraction:.0%})"
        tried = ", ".join(f"{size}:{value['flips']}/{value['runs']}" for size, value in sorted(result.tried.items()))
        print(f"against {result.majority} (committed say {result.alternative}): critical mass {found}; flips by size {tried}")
    return 0


@command("unbiased-pool")
def unbiased_pool(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim unbiased-pool",
                     description="Random six-character pools until one's first choices are within a JS distance of uniform.")
    parser.add_argument("--scenario", default=None, help="a naming-game scenario file for the prompt and sampling (default: the paper's)")
    parser.add_argument("--pool-size", type=int, default=2)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--threshold", type=finite_float, default=0.005, help="Jensen-Shannon distance, base 2 (paper: 0.005)")
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--backend", default=STAND_IN)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="save the tries here for the report")
    options = parser.parse_args(argv)
    # lazy: this subcommand's own modules (Mesa, scipy), not every naming subcommand's
    from ...analysis.recorded import save_artifact
    from . import NamingGame
    from .bias import PoolSearch, find_unbiased_pool

    scenario = load_scenario(options.scenario)[0] if options.scenario else NamingGame()
    if not isinstance(scenario, NamingGame):
        raise UserError("--scenario must hold a naming-game scenario")
    search = PoolSearch(pool_size=options.pool_size, samples=options.samples, threshold=options.threshold,
                        max_tries=options.tries, seed=options.seed, backend=options.backend)
    result = find_unbiased_pool(search, scenario)
    for entry in result.tries:
        kept = " kept" if entry["kept"] else ""
        distance = "none (no choices)" if entry["js_distance"] is None else f"{entry['js_distance']:.4g}"
        print(f"{' '.join(entry['pool'])}: counts {entry['counts']} (fallbacks {entry['fallbacks']}, left out), "
              f"JS distance {distance}{kept}")
    if options.out is not None:
        save_artifact(options.out, "unbiased_pool", result.as_dict() | {"backend": options.backend, "threshold": options.threshold,
                                                                        "samples": options.samples})
    if result.pool is None:
        print(f"no pool within {options.threshold} in {options.tries} tries; raise --samples or --tries", file=sys.stderr)
        return 1
    print(f"pool: {','.join(result.pool)}  (use --set names={','.join(result.pool)})")
    return 0


@command("comprehension")
def comprehension(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim comprehension", description="Table S7's questions at a recorded run's states.")
    parser.add_argument("directory", help="the output directory of a naming-game run")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--run", type=int, default=1)
    parser.add_argument("--max-states", type=int, default=200)
    parser.add_argument("--backend", default="", help="default: the backend the run used")
    parser.add_argument("--seed", type=int, default=0)
    batch_options(parser, "ask every question through the provider's batch API first")
    scenario_option(parser)
    options = parser.parse_args(argv)
    from .comprehension_check import (  # lazy: this subcommand's own module (Mesa, scipy), not every naming subcommand's
        ComprehensionCheck,
        check,
    )

    recorded(results_directory(options.directory), options.scenario_files, keep=False)
    document = check(results_directory(options.directory), ComprehensionCheck(agents=options.agents, run=options.run,
                                                                       max_states=options.max_states,
                                                                       backend=options.backend, seed=options.seed,
                                                                       batch=options.batch,
                                                                       batch_poll_s=options.batch_poll))
    for entry in document["accuracy"]:
        print(f"{entry['question']:<14} {entry['accuracy']:.3f} [{entry['ci_low']:.3f}, {entry['ci_high']:.3f}] "
              f"({entry['correct']}/{entry['asked']})")
    print(spent_line(document["spent"], options.batch))
    return 0


def batch_options(parser: CommandParser, what: str) -> None:
    """`--batch` and `--batch-poll` of a command whose calls are independent (as a run's)."""
    parser.add_argument("--batch", action="store_true",
                        help=f"{what} (one batch, at half price, answered within hours; openai: and anthropic: "
                             f"backends, with the response cache), then answer from the cache; a batch submitted "
                             f"before and still pending is polled, not submitted again")
    parser.add_argument("--batch-poll", type=finite_float, default=30.0, metavar="S",
                        help="seconds between looks at a submitted batch (default 30)")


def spent_line(spent: dict[str, float], batch: bool) -> str:
    return (f"spent: {int(spent['calls'])} requests, ${spent['cost_usd']:.6f}"
            + (" (through the batch API, at half price)" if batch else "") + "; answers from the response cache cost nothing")


@command("check-model")
def check_model(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim check-model",
                     description="Check a model before running the naming-game experiments on it: the share of readable "
                                 "replies with and without the answer grammar, position and letter preference, "
                                 "calibration of its stored option distributions, and the paper's comprehension "
                                 "questions (Table S7), with a plain verdict. A few minutes on SmolLM2 on a laptop CPU.")
    parser.add_argument("--backend", required=True, help="the model, as for a run: local:smollm2, openai:MODEL@URL, ...")
    parser.add_argument("--names", default="Q,M", help="the name pool, comma-separated (default Q,M)")
    parser.add_argument("--seeds", type=int, default=60, help="seeds per state for calibration (default 60)")
    parser.add_argument("--preference-seeds", type=int, default=24,
                        help="seeds per option order for the position and letter preference (default 24); a model "
                             "that reports no distributions is judged on these samples alone")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=finite_float, default=60.0,
                        help="seconds per request, and at least the start-up probe's deadline (default 60)")
    parser.add_argument("--no-cache", action="store_true",
                        help="ask the model every time instead of the shared response cache: measure it afresh")
    parser.add_argument("--out", type=Path, default=None, help="also write the report as JSON here")
    batch_options(parser, "ask every request of the check (the preference in both grammar modes) through the "
                          "provider's batch API first")
    options = parser.parse_args(argv)
    if not 1 <= options.preference_seeds <= 100_000:
        raise UserError(f"--preference-seeds must be from 1 to 100000 (got {options.preference_seeds})")
    names = tuple(name.strip() for name in options.names.split(",") if name.strip())
    if len(names) < 2 or len(set(names)) != len(names):
        raise UserError(f"--names needs two or more distinct names (got '{options.names}')")
    if options.seeds < 10:
        raise UserError(f"--seeds must be at least 10 for the calibration test to say anything (got {options.seeds})")
    from .model_check import (  # lazy: this subcommand's own module (Mesa, scipy), not every naming subcommand's
        ModelCheck,
        backend_options,
        check_model,
        report_lines,
    )

    check = ModelCheck(backend=options.backend, names=names, calibration_seeds=options.seeds, seed=options.seed,
                       preference_seeds=options.preference_seeds, timeout_s=options.timeout, cache=not options.no_cache,
                       batch=options.batch, batch_poll_s=options.batch_poll)
    backend_options(check)  # a bad --timeout, --batch with --no-cache: one line, before the model loads
    report = check_model(check)
    lines = report_lines(report, check)
    if report.spent:  # before the verdict, which stays the last line
        lines.insert(len(lines) - 1, spent_line(report.spent, options.batch))
    for line in lines:
        print(line)
    if options.out is not None:
        import json

        options.out.write_text(json.dumps(report.as_dict(), indent=2), encoding="utf-8")
    return 0


@command("import-ainorms")
def import_ainorms(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim import-ainorms",
                           description="(also `import ainorms`) Read the AI-norms repository's published runs (Flint Ashery et al. 2025: "
                                       "data/*.zip, or a directory of them or of their pickles) into results "
                                       "directories agentsim's analyses and `report` read. Pickles are read as plain "
                                       "data only: one that names any global is refused and nothing in it runs.")
    parser.add_argument("source", type=Path, help="an AI-norms zip (data/llama31_data.zip), a .pkl, or a directory")
    parser.add_argument("--out", type=Path, required=True,
                        help="a new results directory to write (written whole, or not at all)")
    parser.add_argument("--max-rounds", type=int, default=60,
                        help="agentsim rounds (N/2 interactions) a committed minority has to flip the convention "
                             "(default 60: the paper's 30 population rounds of N interactions)")
    parser.add_argument("--share", type=finite_float, default=1.0, help="share of runs that must flip (default 1)")
    options = parser.parse_args(argv)
    with import_outcome(options.out):
        # lazy: this subcommand's own module (Mesa, scipy), not every naming subcommand's
        from .ainorms import ImportSettings, first_choice_tests, import_source

        settings = ImportSettings(max_rounds=options.max_rounds, required_share=options.share)
        result = import_source(options.source, options.out, settings, progress=lambda line: print(line, file=sys.stderr))
    for where in result.skipped:
        print(f"skipped (meta-prompting: not runs agentsim reads): {where}",
              file=sys.stderr)
    for bias_test, test in first_choice_tests(result):
        counts = ", ".join(f"{name}={count}" for name, count in zip(test.names, test.counts))
        print(f"{bias_test.condition.model}: individual bias [{' '.join(bias_test.condition.names)}] from its bias test: {counts}; "
              f"{test.test} p={test.p_value:.3g}, JS distance={test.js_distance:.4g} (base 2)")

    def mass(size: int | None, agents: int) -> str:
        return "none of the sizes tried" if size is None else f"{size} of {agents}"

    for entry in result.critical_masses:
        found = entry.result
        tried = ", ".join(f"{size}:{value['flips']}/{value['runs']}" for size, value in sorted(found.tried.items()))
        print(f"{entry.group}: against {found.majority} (committed say {found.alternative}): critical mass "
              f"{mass(found.critical_mass, found.agents)} (the paper's mean-curve criterion: "
              f"{mass(entry.paper, found.agents)}); flips within {found.max_rounds} rounds by size {tried}")
    for imported in result.imported:
        if imported.condition.kind == "strategy":
            print(f"{imported.condition.model}: strategies by memory (Table 1): python -m agentsim strategies "
                  f"{imported.directory}")
    print(f"{sum(entry.runs for entry in result.imported)} runs in {len(result.imported)} experiments under "
          f"{options.out}; python -m agentsim report {options.out}")
    return 0
