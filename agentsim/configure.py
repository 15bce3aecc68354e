"""One way to build an experiment: what a front door was given (`ExperimentOptions`) in, the
configuration the runs play (`session.ExperimentConfig`) out, by one function, `configure`.

Every front door goes through it: the command line (`python -m agentsim FILE ...`,
agentsim/cli.py, whose flags agentsim/flags.py reads into the options), the Python API
(`agentsim.run`, `arun`, `prepare`), `estimate` (which plays the configuration on the stand-in),
and so the Ray driver (which sends the configuration the session opened to its workers). Mesa's
`PopulationModel(scenario, **params)` builds its scenario with the same step
(`scenario_files.scenario_from`). So each rule is written once and a mistake is refused in the
same line whichever door it came through: the form of the options here, their values in
`ExperimentConfig`, what needs the scenario or the output directory in `Session.open`.
Refusals name the command line's flags (`--runs` is `runs=` from Python).

What `configure` reads, and nothing else: the scenario (a file, a class or an object) and the
`--set` changes; the file's RUNS, POPULATION and VARIANTS; on `--resume`, what the experiment
in the output directory recorded (its scenario file, parameters, seed, backends, run count),
read without changing it. It writes nothing and creates no directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .distributed import require_ray
from .errors import ArgumentError, OutputDirError, ScenarioFileError, UserError
from .llm.providers import STAND_IN
from .llm.specs import BackendOptions
from .scenario import Scenario
from .scenario_files import ScenarioSource, file_population, file_runs, scenario_from, with_changes
from .session import (
    LOCAL,
    RAY,
    ExperimentConfig,
    check_scenario_digest,
    fresh_directory,
    recorded_runs,
    refuse_linked_store,
)
from .store import DATABASE, MOVES, Store, recorded_level
from .variants import pinned_variants

GIVE_A_SCENARIO = ("give a scenario file, e.g. python -m agentsim scenarios/naming_game.py (or --resume --out DIR to "
                   "continue a recorded experiment)")


@dataclass(frozen=True, kw_only=True)
class ExperimentOptions:
    """What a front door was given, as given: None where the user said nothing (the scenario
    file's RUNS and POPULATION, or on `--resume` what the experiment recorded, fill it in).
    Each field is a flag of the command line and a keyword of `agentsim.run` (`llm` is its
    `options=`). Checked when made: the type of each value (from Python), and what cannot go
    together; the values themselves are checked by the configuration they build."""

    scenario: ScenarioSource | None = None  # None: with `resume`, the one recorded in `out`
    backend: str | None = None
    population: str | None = None  # "SPEC=COUNT,...": a mixed-model population instead of one backend
    runs: int | None = None  # each variant's replicates; None: the file's RUNS, or on a resume the recorded count
    add_runs: int = 0  # with `resume`: replicates added to the recorded ones
    seed: int | None = None  # None: 0, or on a resume without a scenario the recorded seed
    overrides: Mapping[str, Any] = field(default_factory=dict)  # `--set`: text as the command line reads it, or values
    out: str | Path | None = None  # None: results/NAME/YYYYMMDD-HHMMSS (on a resume: the latest there)
    resume: bool = False
    # With `resume`: continue with the scenario file as it is now, though it differs from the file
    # the runs started with (`--scenario-changed`; by default such a resume is refused).
    scenario_changed: bool = False
    checkpoint_seconds: float = 1.0
    # What the runs record (`--record`: moves, rounds, summary; store.RECORD_LEVELS); None: moves
    # for a new experiment, the recorded level on a resume.
    record: str | None = None
    executor: str = LOCAL
    ray_address: str = ""
    cpus_per_run: float = 1.0
    llm: BackendOptions = field(default_factory=BackendOptions)

    def __post_init__(self) -> None:
        for option in fields(self):
            kinds, what = _TAKES[option.name]
            value = getattr(self, option.name)
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                name = _PYTHON_NAMES.get(option.name, option.name)
                raise ArgumentError(f"{name}= takes {what} (got {type(value).__name__} {value!r:.60})")
        if self.backend is not None and self.population is not None:
            raise UserError("--backend and --population both choose the agents' models; give one of them")
        for flag, value in (("--backend", self.backend), ("--population", self.population)):
            if value is not None and not value.strip():
                raise UserError(f"{flag} is empty; name a backend such as stand-in, openai:MODEL or tgi:URL "
                                f"(or drop {flag} for the scenario's default)")
        if self.add_runs and self.runs is not None:
            raise UserError(f"--runs and --add-runs both set the number of runs; with --resume give --add-runs "
                            f"{self.add_runs} alone")
        if isinstance(self.out, str) and not self.out.strip():  # an empty --out was the current directory
            raise UserError("--out is empty; give a directory, e.g. --out results/mine")
        if self.scenario is None and not self.resume:
            raise UserError(GIVE_A_SCENARIO)
        if self.scenario_changed and not self.resume:
            raise UserError("--scenario-changed continues a recorded experiment with its edited scenario file: add "
                            "--resume --out DIR, or drop it")
        if self.scenario is None and self.out is None:
            raise UserError("--resume without a scenario file needs the output directory: --resume --out DIR")


_WHOLE = (int,)
_TAKES: dict[str, tuple[tuple[type, ...], str]] = {
    "scenario": ((object,), "anything: `scenario_from` says what it takes"),
    "backend": ((str, type(None)), 'a backend spec such as "stand-in" or "openai:MODEL"'),
    "population": ((str, type(None)), 'a population such as "openai:MODEL=12,stand-in=12"'),
    "runs": ((int, type(None)), "a whole number of runs, or None for the scenario file's RUNS"),
    "add_runs": (_WHOLE, "a whole number of runs to add on a resume"),
    "seed": ((int, type(None)), "a whole number"),
    "overrides": ((Mapping,), 'a mapping of parameter names to values, e.g. {"agents": 24}'),
    "out": ((str, Path, type(None)), "a directory path"),
    "resume": ((bool,), "True or False"),
    "scenario_changed": ((bool,), "True or False"),
    "checkpoint_seconds": ((int, float), "a number of seconds"),
    "record": ((str, type(None)), '"moves", "rounds", "summary" or None (a resume: the recorded level)'),
    "executor": ((str,), '"local" or "ray"'),
    "ray_address": ((str,), 'a Ray address such as "ray://head:10001" or "auto"'),
    "cpus_per_run": ((int, float), "a number of CPUs"),
    "llm": ((BackendOptions,), "an agentsim.llm.specs.BackendOptions"),
}
_PYTHON_NAMES = {"llm": "options"}  # what `agentsim.run` calls it


def configure(options: ExperimentOptions) -> ExperimentConfig:
    """The configuration `options` describe (see the module's docstring); a `UserError` in one
    line naming the fix for anything wrong that can be known before the session opens."""
    if options.executor == RAY:
        require_ray()  # a missing extra, in one line, before anything is read
    out = _output_directory(options)
    recorded = recorded_settings(out) if options.resume else {}
    source = options.scenario
    if source is None:  # a resume of the scenario file the experiment recorded
        source = str(recorded.get("scenario_file") or "")
        if not source:
            raise UserError(GIVE_A_SCENARIO)
        if not Path(source).is_file():
            raise ScenarioFileError(f"the scenario file recorded in {out}, '{source}', is not there any more; name it: "
                                    f"python -m agentsim FILE --resume --out {out}")
        # the file the store names, checked before it runs: the file the runs started with
        check_scenario_digest(recorded, source, out=out, changed=options.scenario_changed)
    scenario, module = scenario_from(source)
    overrides = dict(options.overrides)
    if options.scenario is None:  # the recorded experiment's settings, where the options give none
        scenario = _with_recorded(scenario, recorded, overrides)
    scenario = with_changes(scenario, overrides)
    file = str(source) if isinstance(source, (str, Path)) else ""
    population, backend = options.population, options.backend
    if options.scenario is None and population is None and backend is None:
        population, backend = _recorded_backend(recorded)
    if population is None and backend is None:
        population = file_population(module, file, "pass --population")
    variants = pinned_variants(getattr(module, "VARIANTS", ()), overrides)
    if options.scenario is None and "variants" in recorded:
        variants = pinned_variants(recorded["variants"], overrides)
    seed = options.seed if options.seed is not None else int(recorded.get("seed", 0)) if options.scenario is None else 0
    runs = options.runs if options.runs is not None else file_runs(module, file, "pass --runs")
    per_cell = recorded_runs(recorded, max(1, len(variants)), out) if options.resume else None
    if options.runs is None and per_cell is not None:
        # The recorded count, never the file's RUNS (a resume continues what was recorded);
        # `runs` counts each variant's replicates, the store all of them.
        runs = per_cell + options.add_runs
    return ExperimentConfig(
        scenario=scenario,
        variants=variants,
        out=out,
        backend=backend or STAND_IN,
        population=population or "",
        llm=options.llm,
        runs=runs,
        seed=seed,
        resume=options.resume,
        add_runs=options.add_runs,
        checkpoint_seconds=options.checkpoint_seconds,
        # The level the runs record, settled here so that a Ray worker is sent what a local run
        # uses; a resume's differing --record is refused by the session, with the store in view.
        record=options.record if options.record is not None else recorded_level(recorded) if options.resume else MOVES,
        scenario_file=str(Path(file).resolve()) if file else "",  # absolute: analysis names it from any directory
        executor=options.executor,
        ray_address=options.ray_address,
        cpus_per_run=options.cpus_per_run,
        scenario_changed=options.scenario_changed,
    )


def _output_directory(options: ExperimentOptions) -> Path:
    """--out, or results/NAME/TIMESTAMP (NAME: the file's stem, else the scenario's name, so
    that two files of one game stay apart); on a resume without --out, the latest there."""
    if options.out is not None:
        return Path(options.out)
    source = options.scenario
    name = Path(source).stem if isinstance(source, (str, Path)) else str(getattr(source, "name", "scenario"))
    base = Path("results") / name
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
    refuse_linked_store(out)  # (before reading it: never through a link into another directory)
    if not (out / DATABASE).is_file():
        return {}
    with Store.read_only(out, resume=True) as store:
        recorded = store.experiment() if store.has_tables else {}
    if "scenario" not in recorded:
        raise OutputDirError(f"nothing to resume: {out / DATABASE} records no experiment; drop --resume")
    return recorded


def _with_recorded(scenario: Scenario[Any, Any, Any], recorded: dict[str, Any],
                   overrides: Mapping[str, Any]) -> Scenario[Any, Any, Any]:
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
