"""agentsim from Python: run an experiment and get its results, in three lines.

    import agentsim
    results = agentsim.run("scenarios/critical_mass.py", runs=4, overrides={"committed": 8})
    results.runs()          # a pandas DataFrame, one row per run

`run` is synchronous and works in a script and in a notebook alike (where Jupyter's event loop
is already running, the experiment runs on a worker thread); inside async code, `await
agentsim.arun(...)`. Both go through the same experiment runner as the command line (its
checks, store, checkpoints, resume, budget and executors), and return a `Results` over the
output directory; `agentsim.open(DIR)` reads a finished directory (the command line's too) as
the same object. Mistakes a user can make (a bad parameter, an unknown backend, a missing key)
raise `agentsim.errors.UserError` with the one line the command line would print.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .llm.specs import BackendOptions
    from .results import Results
    from .runner import Experiment
    from .scenario import Scenario


def run(scenario: str | Path | Scenario[Any, Any, Any] | type[Scenario[Any, Any, Any]], *, backend: str | None = None,
        population: str | None = None, runs: int | None = None, seed: int = 0,
        overrides: Mapping[str, Any] | None = None, options: BackendOptions | None = None,
        out: str | Path | None = None, resume: bool = False, executor: str = "local", progress: bool | None = None
        ) -> Results:
    """Run `scenario` and return its results.

    scenario    a scenario file (its RUNS, POPULATION and VARIANTS are read as the command line
                reads them), a Scenario object, or a Scenario subclass (built with its defaults)
    backend     the model every agent asks: "stand-in" (the default: the built-in rule, no
                network), "openai:MODEL", "anthropic:MODEL", "tgi:URL", "local:NAME"
    population  a mixed-model population instead: "SPEC=COUNT,SPEC=COUNT"
    runs, seed  seeded replicates (default: the file's RUNS, else 1; with resume: the recorded
                count: another runs= is refused, as the command line refuses --runs without
                --add-runs) and the first one's seed
    overrides   parameter changes, as `--set` takes them: {"agents": 12, "standin.noise": 0.1};
                text values are read as the command line reads them ("max_rounds": "30")
    options     how backends are reached and bounded (`agentsim.llm.specs.BackendOptions`:
                base URL, timeouts, retries, rate limits, cache, --max-calls/--max-cost budget)
    out         the output directory; default `results/NAME/YYYYMMDD-HHMMSS` under the current
                directory, as the command line makes it (NAME: the file's stem or the scenario's
                name), so that the runs stay on disk for `report` and `agentsim.open`
    resume      continue the runs recorded in `out`
    executor    "local" (this process) or "ray"
    progress    None (the default): in a Jupyter notebook, a progress bar in the cell's output
                (runs, calls, calls/s, fallbacks, time left), elsewhere nothing; True: that bar
                in a notebook, elsewhere a log line per run's progress (the command line's
                --no-live lines); False: nothing

    Raises `UserError` for a mistake in the input, before any run, and `RunStopped` when a
    backend fails or the budget is spent (everything recorded is in the output directory:
    `agentsim.open(DIR)` reads it, `resume=True` continues). An interrupt (Ctrl-C, Jupyter's
    Interrupt) stops the runs as it stops the command line's, and raises
    `agentsim.errors.ExperimentInterrupted` (a KeyboardInterrupt) naming the output directory."""
    from .blocking import run_blocking
    from .errors import ExperimentInterrupted

    opened: list[Experiment] = []
    try:
        return run_blocking(_arun(scenario, backend=backend, population=population, runs=runs, seed=seed,
                                  overrides=overrides, options=options, out=out, resume=resume, executor=executor,
                                  progress=progress, opened=opened))
    except KeyboardInterrupt:
        if not opened:  # before the output directory was opened: nothing recorded
            raise
        raise ExperimentInterrupted(str(opened[0].config.out)) from None


async def arun(scenario: str | Path | Scenario[Any, Any, Any] | type[Scenario[Any, Any, Any]], *, backend: str | None = None,
               population: str | None = None, runs: int | None = None, seed: int = 0,
               overrides: Mapping[str, Any] | None = None, options: BackendOptions | None = None,
               out: str | Path | None = None, resume: bool = False, executor: str = "local", progress: bool | None = None
               ) -> Results:
    """`run` in a running event loop: `results = await agentsim.arun(...)` (same arguments)."""
    return await _arun(scenario, backend=backend, population=population, runs=runs, seed=seed, overrides=overrides,
                       options=options, out=out, resume=resume, executor=executor, progress=progress, opened=[])


async def _arun(scenario: str | Path | Scenario[Any, Any, Any] | type[Scenario[Any, Any, Any]], *,
                opened: list[Experiment], **arguments: Any) -> Results:
    """`arun`, keeping the experiment in `opened` once it is open (`run` names its directory
    when interrupted)."""
    from .results import Results

    experiment = prepare(scenario, **arguments)
    opened.append(experiment)
    await experiment.run()
    return Results(experiment.config.out)


def open(directory: str | Path) -> Results:
    """The results of a finished (or stopped) output directory: the command line's or `run`'s."""
    from .results import Results

    return Results(directory)


def prepare(scenario: str | Path | Scenario[Any, Any, Any] | type[Scenario[Any, Any, Any]], *, backend: str | None = None,
            population: str | None = None, runs: int | None = None, seed: int = 0,
            overrides: Mapping[str, Any] | None = None, options: BackendOptions | None = None,
            out: str | Path | None = None, resume: bool = False, executor: str = "local", progress: bool | None = None
            ) -> Experiment:
    """The experiment `run` would run, opened (every input checked, the output directory locked)."""
    from .errors import ParameterError, UserError
    from .llm.specs import BackendOptions
    from .progress import NoView
    from .runner import Experiment, ExperimentConfig
    from .scenario import as_scenario
    from .scenario_files import file_population, file_runs, load_scenario
    from .session import fresh_directory
    from .variants import pinned_variants

    _check_arguments(backend=backend, population=population, seed=seed, overrides=overrides, options=options,
                     out=out, resume=resume, executor=executor, progress=progress)
    module: Any = None
    file = ""
    if isinstance(scenario, (str, Path)):
        file = str(scenario)
        built, module = load_scenario(scenario)
    elif (made := as_scenario(scenario)) is not None:  # a Scenario or a layer game (object or class)
        built = made
    else:
        raise UserError(f"scenario must be a scenario file's path, a Scenario or Game object or a Scenario or Game "
                        f"subclass (got {type(scenario).__name__})")
    if backend is not None and population is not None:
        raise UserError("backend= and population= both choose the agents' models; give one of them")
    changes = dict(overrides or {})
    built = _with_overrides(built, changes)
    if runs is None and resume and out is not None:  # a resume continues the recorded runs, not the file's RUNS
        from .cli import recorded_settings

        recorded = recorded_settings(Path(out)).get("runs")
        variants = max(1, len(getattr(module, "VARIANTS", ()) or ()))
        runs = recorded // variants if isinstance(recorded, int) and recorded > 0 else None
    if runs is None:
        runs = file_runs(module, file, "pass runs=")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ParameterError(f"runs must be a whole number of at least 1 (got {runs!r})")
    if population is None and backend is None and module is not None:
        population = file_population(module, file, "pass population=")
    name = Path(file).stem if file else built.name
    config = ExperimentConfig(
        scenario=built,
        variants=pinned_variants(getattr(module, "VARIANTS", ()), {key: str(value) for key, value in changes.items()}),
        out=Path(out) if out is not None else fresh_directory(Path("results") / name),
        backend=backend or "stand-in",
        population=population or "",
        llm=options or BackendOptions(),
        runs=runs,
        seed=seed,
        resume=resume,
        scenario_file=str(Path(file).resolve()) if file else "",
        executor=executor,
    )
    view: Any = NoView()  # a script prints nothing it was not asked for
    if progress is not None and not isinstance(progress, bool):
        raise UserError(f"progress must be True, False or None (got {progress!r})")
    if progress is not False:
        from .notebook import NotebookView, in_notebook

        if in_notebook():
            view = NotebookView()
        elif progress:
            from .live import LogView, configure_logging

            configure_logging()
            view = LogView()
    experiment = Experiment(config, view)
    experiment.open()
    return experiment


def _check_arguments(**arguments: Any) -> None:
    """`ArgumentError` (a UserError and a TypeError) naming the first argument of the wrong
    type and what it takes, before anything is built."""
    from .errors import ArgumentError
    from .llm.specs import BackendOptions

    takes: dict[str, tuple[tuple[type, ...], str]] = {
        "backend": ((str, type(None)), 'a backend spec such as "stand-in" or "openai:MODEL"'),
        "population": ((str, type(None)), 'a population such as "openai:MODEL=12,stand-in=12"'),
        "seed": ((int,), "a whole number"),
        "overrides": ((Mapping, type(None)), 'a mapping of parameter names to values, e.g. {"agents": 24}'),
        "options": ((BackendOptions, type(None)), "an agentsim.llm.specs.BackendOptions"),
        "out": ((str, Path, type(None)), "a directory path"),
        "resume": ((bool,), "True or False"),
        "executor": ((str,), '"local" or "ray"'),
        "progress": ((bool, type(None)), "True, False or None (a bar in a notebook)"),
    }
    for name, value in arguments.items():
        kinds, what = takes[name]
        if not isinstance(value, kinds) or (name == "seed" and isinstance(value, bool)):
            raise ArgumentError(f"{name}= takes {what} (got {type(value).__name__} {value!r:.60})")


def _with_overrides(scenario: Scenario[Any, Any, Any], changes: dict[str, Any]) -> Scenario[Any, Any, Any]:
    """`--set`-style changes: text is read as the command line reads it, other values are used
    as they are (a parameter, or the stand-in's setting `standin.KEY`)."""
    from .params import StandInSettings

    texts = {key: value for key, value in changes.items() if isinstance(value, str)}
    values = {key: value for key, value in changes.items() if not isinstance(value, str)}
    if texts:
        scenario = scenario.with_overrides(texts)
    prefix = StandInSettings.key_prefix
    settings = {key.removeprefix(prefix): value for key, value in values.items() if key.startswith(prefix)}
    params = {key: value for key, value in values.items() if not key.startswith(prefix)}
    if params:
        scenario.params.refuse_unread(*params)
        scenario = scenario.with_params(**params)
    if settings:
        scenario = type(scenario)(scenario.params, standin=scenario.standin.replace(**settings))
    return scenario
