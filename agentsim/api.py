"""agentsim from Python: run an experiment and get its results, in three lines.

    import agentsim
    results = agentsim.run("scenarios/critical_mass.py", runs=4, overrides={"committed": 8})
    results.runs()          # a pandas DataFrame, one row per run

`run` is synchronous and works in a script and in a notebook alike (where Jupyter's event loop
is already running, the experiment runs on a worker thread); inside async code, `await
agentsim.arun(...)`. Both go through the same experiment runner as the command line (its
checks, store, checkpoints, resume, budget and executors), with the same configuration: the
keywords are the command line's flags (`add_runs=` is `--add-runs`), read by the one builder
every front door uses (agentsim/configure.py). They return a `Results` over the output
directory; `agentsim.open(DIR)` reads a finished directory (the command line's too) as the same
object. Mistakes a user can make (a bad parameter, an unknown backend, a missing key) raise
`agentsim.errors.UserError` with the one line the command line would print, naming its flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .blocking import run_blocking
from .configure import ExperimentOptions, configure
from .errors import ArgumentError, ExperimentInterrupted
from .llm.specs import BackendOptions
from .progress import NoView
from .results import Results
from .scenario_files import ScenarioSource

if TYPE_CHECKING:  # (the runner is imported where a run needs it: `agentsim.open` needs no Mesa)
    from .runner import Experiment


def run(scenario: ScenarioSource | None = None, *, backend: str | None = None, population: str | None = None,
        runs: int | None = None, add_runs: int = 0, seed: int | None = None, overrides: Mapping[str, Any] | None = None,
        options: BackendOptions | None = None, out: str | Path | None = None, resume: bool = False,
        scenario_changed: bool = False, checkpoint_seconds: float = 1.0, record: str | None = None,
        executor: str = "local", ray_address: str = "", cpus_per_run: float = 1.0, progress: bool | None = None) -> Results:
    """Run `scenario` and return its results.

    scenario    a scenario file (its RUNS, POPULATION and VARIANTS are read as the command line
                reads them), a Scenario object, or a Scenario subclass (built with its defaults);
                with resume, None continues the one recorded in `out`
    backend     the model every agent asks: "stand-in" (the default: the built-in rule, no
                network), "openai:MODEL", "anthropic:MODEL", "tgi:URL", "local:NAME"
    population  a mixed-model population instead: "SPEC=COUNT,SPEC=COUNT"
    runs, seed  seeded replicates (default: the file's RUNS, else 1; with resume: the recorded
                count: another runs= is refused, as the command line refuses --runs without
                --add-runs) and the first one's seed (default 0; with resume and no scenario,
                the recorded one)
    add_runs    with resume: run this many more replicates than the experiment recorded
    overrides   parameter changes, as `--set` takes them: {"agents": 12, "standin.noise": 0.1};
                text values are read as the command line reads them ("max_rounds": "30")
    options     how backends are reached and bounded (`agentsim.llm.specs.BackendOptions`:
                base URL, timeouts, retries, rate limits, cache, --max-calls/--max-cost budget)
    out         the output directory; default `results/NAME/YYYYMMDD-HHMMSS` under the current
                directory, as the command line makes it (NAME: the file's stem or the scenario's
                name), so that the runs stay on disk for `report` and `agentsim.open`; with
                resume, default the latest there
    resume      continue the runs recorded in `out`
    scenario_changed   with resume: continue with the scenario file as it is now, though its
                content differs from the file's the runs started with (else refused)
    checkpoint_seconds   commit rows and a resumable checkpoint at most this often
    record      what the runs record: "moves" (every encounter and decision, the default),
                "rounds" (the per-round tallies and every encounter of a sample of about 100
                agents) or "summary" (each run's summary); None on a resume: the recorded level
    executor, ray_address, cpus_per_run   "local" (this process) or "ray": each run a Ray task on
                the cluster at `ray_address` (default: a Ray started here), with this many CPUs
    progress    None (the default): in a Jupyter notebook, a progress bar in the cell's output
                (runs, calls, calls/s, fallbacks, time left), elsewhere nothing; True: that bar
                in a notebook, elsewhere a log line per run's progress (the command line's
                --no-live lines); False: nothing

    Raises `UserError` for a mistake in the input, before any run, and `RunStopped` when a
    backend fails or the budget is spent (everything recorded is in the output directory:
    `agentsim.open(DIR)` reads it, `resume=True` continues). An interrupt (Ctrl-C, Jupyter's
    Interrupt) stops the runs as it stops the command line's, and raises
    `agentsim.errors.ExperimentInterrupted` (a KeyboardInterrupt) naming the output directory."""
    opened: list[Experiment] = []
    try:
        return run_blocking(_arun(scenario, backend=backend, population=population, runs=runs, add_runs=add_runs,
                                  seed=seed, overrides=overrides, options=options, out=out, resume=resume,
                                  scenario_changed=scenario_changed, checkpoint_seconds=checkpoint_seconds,
                                  record=record, executor=executor, ray_address=ray_address, cpus_per_run=cpus_per_run,
                                  progress=progress, opened=opened))
    except KeyboardInterrupt:
        if not opened:  # before the output directory was opened: nothing recorded
            raise
        raise ExperimentInterrupted(str(opened[0].config.out)) from None


async def arun(scenario: ScenarioSource | None = None, *, backend: str | None = None, population: str | None = None,
               runs: int | None = None, add_runs: int = 0, seed: int | None = None,
               overrides: Mapping[str, Any] | None = None, options: BackendOptions | None = None,
               out: str | Path | None = None, resume: bool = False, scenario_changed: bool = False,
               checkpoint_seconds: float = 1.0, record: str | None = None, executor: str = "local",
               ray_address: str = "", cpus_per_run: float = 1.0, progress: bool | None = None) -> Results:
    """`run` in a running event loop: `results = await agentsim.arun(...)` (same arguments)."""
    return await _arun(scenario, backend=backend, population=population, runs=runs, add_runs=add_runs, seed=seed,
                       overrides=overrides, options=options, out=out, resume=resume, scenario_changed=scenario_changed,
                       checkpoint_seconds=checkpoint_seconds, record=record, executor=executor,
                       ray_address=ray_address, cpus_per_run=cpus_per_run, progress=progress, opened=[])


async def _arun(scenario: ScenarioSource | None, *, opened: list[Experiment], **arguments: Any) -> Results:
    """`arun`, keeping the experiment in `opened` once it is open (`run` names its directory
    when interrupted)."""
    experiment = prepare(scenario, **arguments)
    opened.append(experiment)
    await experiment.run()
    return Results(experiment.config.out)


def open(directory: str | Path) -> Results:
    """The results of a finished (or stopped) output directory: the command line's or `run`'s."""
    return Results(directory)


def prepare(scenario: ScenarioSource | None = None, *, backend: str | None = None, population: str | None = None,
            runs: int | None = None, add_runs: int = 0, seed: int | None = None,
            overrides: Mapping[str, Any] | None = None, options: BackendOptions | None = None,
            out: str | Path | None = None, resume: bool = False, scenario_changed: bool = False,
            checkpoint_seconds: float = 1.0, record: str | None = None, executor: str = "local", ray_address: str = "",
            cpus_per_run: float = 1.0, progress: bool | None = None) -> Experiment:
    """The experiment `run` would run, opened (every input checked, the output directory locked)."""
    if progress is not None and not isinstance(progress, bool):  # (what the view is: the API's own)
        raise ArgumentError(f"progress= takes True, False or None (a bar in a notebook) (got {type(progress).__name__} "
                            f"{progress!r:.60})")
    config = configure(ExperimentOptions(
        scenario=scenario, backend=backend, population=population, runs=runs, add_runs=add_runs, seed=seed,
        overrides={} if overrides is None else overrides, out=out, resume=resume, scenario_changed=scenario_changed,
        checkpoint_seconds=checkpoint_seconds, record=record,
        executor=executor, ray_address=ray_address, cpus_per_run=cpus_per_run,
        llm=BackendOptions() if options is None else options))
    from .runner import Experiment  # lazy: the population model and Mesa, only for a run

    view: Any = NoView()  # a script prints nothing it was not asked for
    if progress is not False:
        from .notebook import NotebookView, in_notebook  # lazy: IPython's display, only where asked

        if in_notebook():
            view = NotebookView()
        elif progress:
            from .live import LogView, configure_logging  # lazy: rich and structlog, only where asked

            configure_logging()
            view = LogView()
    experiment = Experiment(config, view)
    experiment.open()
    return experiment
