"""An experiment's session: everything about its output directory and its identity, checked
before any run starts and kept while the runs go. It validates the configuration, holds the
directory's lock and the store, records what the experiment is (and, on a resume, checks that
it is the same one, its prompts and its checkpoints' format), builds the backends, and writes
summary.json at the end. It runs nothing: an executor (agentsim/executors.py) does."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import math
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checkpoints import CHECKPOINT_FORMAT, CheckpointError
from .errors import BackendSpecError, DamagedStoreError, OutputDirError, ParameterError, UserError
from .estimate_file import read as read_estimate
from .flat import BY_MODEL_COLUMNS, BY_MODEL_CSV, RUN_COLUMNS, RUNS_CSV, by_model_rows, run_table_rows, write_csv
from .llm.accounting import Budget
from .llm.base import LanguageModel
from .llm.limiter import LimitedModel
from .llm.prices import PRICES_HELP, load_user_prices
from .llm.providers import STAND_IN, is_stand_in
from .llm.specs import BackendOptions, backend_price, build_backend, parse_population, parse_spec
from .llm.stack import layer
from .model_fitness import refuse_unscorable
from .progress import run_outcome
from .scenario import Scenario
from .secrets import redact, strip_credentials
from .store import DATABASE, MOVES, RECORD_LEVELS, SAME_DRAWS_SINCE, Store, recorded_level
from .summaries import merge_by_model, sum_usage, total_by_model
from .variants import variant_cell, variant_scenario
from .version import __version__

SUMMARY = "summary.json"
MIN_SEED, MAX_SEED = 0, 2**63 - 1  # numpy's and Mesa's generators take seeds >= 0
MAX_AGENTS = 10_000_000  # one run's population that fits a workstation's memory (about 1 KB an agent: docs/scale.md)
MAX_RUNS = 10_000
RUNS_AT_ONCE = 256  # runs in memory at once (fewer for large populations: LIVE_AGENTS in all)
LIVE_AGENTS = 1_000_000
LOCK = ".agentsim.lock"
LOCAL, RAY = "local", "ray"
EXECUTORS = (LOCAL, RAY)
RUN_STATUSES = ("running", "done", "failed", "interrupted", "stopped")  # what the runs table's `status` holds
_NOTHING_CHANGED = "nothing was changed: restore the database from a copy, or record into a new --out DIR"
RULE_AGENTS = "rule agents"  # the backend label of an experiment whose agents follow rules, asking no model


class DirectoryLock:
    """An exclusive lock on an output directory while an experiment writes it: a second
    agentsim on the same directory (two --resume at once) gets one line, not an
    IntegrityError. The lock is the kernel's (flock): a killed process leaves none behind."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    @classmethod
    def acquire(cls, directory: Path) -> DirectoryLock:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            handle = open(directory / LOCK, "a+")  # noqa: SIM115  (held for the experiment's life)
        except OSError as error:
            raise OutputDirError(f"cannot write to {directory} ({error.strerror}); choose a writable --out DIR") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise OutputDirError(f"{directory} is being written by another agentsim right now; wait for it to "
                                 f"finish, or use another --out DIR") from None
        return cls(handle)

    def release(self) -> None:
        if not self.handle.closed:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    """What the user asked for: the scenario, where to record it, the backends, how many
    seeded replicates and where they execute. Every front door (the command line, the Python
    API, `estimate`, the Ray driver's workers) gets it from one builder (agentsim/configure.py);
    each value is checked here, once, in the command line's words, and what needs the scenario
    or the directory in `Session.open`."""

    scenario: Scenario[Any, Any, Any]
    out: Path
    backend: str = STAND_IN
    runs: int = 1  # each variant's replicates (`replicates` counts them all)
    seed: int = 0
    resume: bool = False
    # With `resume`: replicates added to the recorded ones (per variant, as `runs` counts);
    # without it a resume continues exactly the recorded runs, and `runs` must name that count.
    add_runs: int = 0
    checkpoint_seconds: float = 1.0
    scenario_file: str = ""
    population: str = ""  # "SPEC=COUNT,SPEC=COUNT": a mixed-model population (overrides backend)
    llm: BackendOptions = field(default_factory=BackendOptions)
    # Parameter variants (a grid of conditions): each is a dict of parameter changes; every
    # variant runs `runs` seeded replicates (see `run_cell` below). Empty: the scenario as is.
    variants: tuple[dict[str, Any], ...] = ()
    # Where the runs execute: "local" (this process's event loop) or "ray" (Ray tasks, on the
    # cluster at `ray_address`, or on a Ray started in process when it is empty).
    executor: str = LOCAL
    ray_address: str = ""
    # The CPUs Ray sets aside for each run: 1 for runs that compute (the stand-in, rule
    # agents); a fraction for runs that mostly wait on a model server, so that more of them
    # share a worker node's cores and keep the servers busy.
    cpus_per_run: float = 1.0
    # What the runs record (store.RECORD_LEVELS: moves, rounds, summary); None: moves for a new
    # experiment, the recorded level on a resume.
    record: str | None = None
    # With `resume`: continue with the scenario file as it is now although its content differs
    # from the file's the runs started with (`--scenario-changed`; its digest is then recorded anew).
    scenario_changed: bool = False

    def __post_init__(self) -> None:
        if self.record is not None and self.record not in RECORD_LEVELS:
            raise ParameterError(f"--record must be one of {', '.join(RECORD_LEVELS)} (got {self.record!r})")
        if isinstance(self.runs, bool) or not isinstance(self.runs, int) or not 1 <= self.runs <= MAX_RUNS:
            raise ParameterError(f"--runs must be between 1 and {MAX_RUNS} (got {self.runs}); run more as "
                                 f"separate experiments with --seed")
        if isinstance(self.add_runs, bool) or not isinstance(self.add_runs, int) or not 0 <= self.add_runs <= MAX_RUNS:
            raise ParameterError(f"--add-runs must be a number of runs from 1 to {MAX_RUNS} (got {self.add_runs})")
        if self.add_runs and not self.resume:
            raise ParameterError("--add-runs adds replicates to a recorded experiment: add --resume --out DIR, or "
                                 "give the number of runs with --runs")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not MIN_SEED <= self.seed <= MAX_SEED - self.runs:
            raise ParameterError(f"--seed must be a whole number from {MIN_SEED} to 2^63 - 1 - runs (got {self.seed})")
        if not (math.isfinite(self.checkpoint_seconds) and 0 <= self.checkpoint_seconds <= 86_400):
            raise ParameterError(f"--checkpoint-seconds must be a number of seconds from 0 to 86400 "
                                 f"(got {self.checkpoint_seconds})")
        if self.executor not in EXECUTORS:
            raise ParameterError(f"--executor must be one of {', '.join(EXECUTORS)} (got {self.executor!r})")
        if not (math.isfinite(self.cpus_per_run) and 0.01 <= self.cpus_per_run <= 1024):
            raise ParameterError(f"--cpus-per-run must be a number of CPUs from 0.01 to 1024 (got {self.cpus_per_run})")
        if (self.ray_address or self.cpus_per_run != 1.0) and self.executor != RAY:
            flag = "--ray-address" if self.ray_address else "--cpus-per-run"
            raise ParameterError(f"{flag} is for --executor ray; add --executor ray or drop it")

    @property
    def replicates(self) -> int:
        """Every run of the experiment: `runs` for each variant of the grid (or the one scenario)."""
        return self.runs * max(1, len(self.variants))

    @property
    def backend_label(self) -> str:
        """What the store, the summary and the view name as the experiment's backend: rule
        agents (theory baselines) ask no backend, so they are not called the stand-in."""
        if self.scenario.rule_agents:
            return RULE_AGENTS
        return self.population or self.backend

    def on_the_stand_in(self, out: Path) -> ExperimentConfig:
        """The same experiment (scenario, grid, runs, seeds) played afresh on the stand-in, in
        process, into `out`: what `--batch` and `estimate` play to find the calls it will make."""
        return dataclasses.replace(self, out=out, backend=STAND_IN, population="", llm=BackendOptions(),
                                   resume=False, add_runs=0, executor=LOCAL, ray_address="", cpus_per_run=1.0)


_FLAGS = {"seed": "--seed", "backend": "--backend/--population", "scenario": "the scenario file"}


def _holds_results(store: Store) -> bool:
    """Whether any run in `store` recorded something: a finished run, an encounter, a move or a
    round. Runs that failed before that (a template naming an unknown field, a bug in the game's
    first round) leave a directory that a fresh start may take over."""
    if any(row["status"] == "done" for row in store.runs()):
        return True
    if recorded_level(store.experiment()) != MOVES and next(iter(store.rows(
            "SELECT 1 FROM checkpoints WHERE t > 0 LIMIT 1")), None) is not None:
        return True  # (--record rounds or summary: a run's progress may be in its checkpoint alone)
    return any(next(iter(store.rows(f"SELECT 1 FROM {table} LIMIT 1")), None) is not None
               for table in ("encounters", "decisions", "rounds"))


def _difference(key: str, recorded: Any, given: Any) -> str:
    """Which setting of a resumed experiment differs, in the words of the command line."""
    if isinstance(recorded, dict) and isinstance(given, dict):
        prefix = "standin." if key == "standin" else ""
        for name in sorted(set(recorded) | set(given)):
            if recorded.get(name) != given.get(name):
                return (f"{prefix}{name} was {_shown(recorded.get(name))} there, {_shown(given.get(name))} here: "
                        f"--set {prefix}{name}={_shown(recorded.get(name))}")
    return f"{_FLAGS.get(key, key)} was {_shown(recorded)} there, {_shown(given)} here"


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return "true" if value is True else "false" if value is False else str(value)



def run_cell(scenario: Scenario[Any, Any, Any], variant_scenarios: list[Scenario[Any, Any, Any]], seed: int,
             replicate: int) -> tuple[Scenario[Any, Any, Any], int, int | None]:
    """The scenario, seed and variant index (None without variants) of a replicate."""
    if not variant_scenarios:
        return scenario, seed + replicate, None
    variant, cell_seed = variant_cell(replicate, len(variant_scenarios), seed)
    return variant_scenarios[variant], cell_seed, variant


class Session:
    """One experiment's checked configuration, directory lock, store and backends (see the
    module's docstring). `open` checks; `close` writes summary.json and lets go of it all."""

    def __init__(self, config: ExperimentConfig) -> None:
        self.config = config
        self.scenario: Scenario[Any, Any, Any] = config.scenario
        self.variant_scenarios: list[Scenario[Any, Any, Any]] = []
        self.shares: list[tuple[str, int | None]] = []
        self.backends: dict[str, LanguageModel] = {}
        self.budget = Budget()
        self.store: Store
        self.lock: DirectoryLock
        # Lines the user should read once the run starts (a resume by another code version).
        self.notices: list[str] = []
        # The limiters' figures of a Ray sweep, from its cluster-wide limiter (agentsim/distributed).
        self.cluster_limiter_stats: dict[str, Any] | None = None
        # What `python -m agentsim estimate --out DIR` expected of this experiment (DIR/estimate.json).
        self.estimate: dict[str, Any] | None = None
        self.code_version = code_version()

    def open(self, warn: Callable[[str], None]) -> None:
        """Check everything the user could get wrong, before any run starts (and, unless the
        output directory is new, before anything in it changes). `warn` takes the backends'
        warnings as they happen."""
        config = self.config = _without_credentials(self.config)  # (its values were checked when it was made)
        self.variant_scenarios = [variant_scenario(config.scenario, variant, config.seed) for variant in config.variants]
        self.scenario = config.scenario.for_experiment(config.seed)
        for scenario in [self.scenario, *self.variant_scenarios]:
            agents = getattr(scenario.params, "agents", None)
            if isinstance(agents, int) and agents > MAX_AGENTS:
                raise ParameterError(f"agents={agents} is more than one run can hold in memory (at most {MAX_AGENTS}); "
                                     f"--set agents={MAX_AGENTS} or fewer")
        for scenario in [self.scenario, *self.variant_scenarios]:  # a template naming a field nobody fills: now, not at a call
            if scenario.codec is not None:
                _render_every_prompt(scenario.codec, config.seed)
        self.shares = self._shares()
        if config.llm.batch:
            from .batch_run import refuse_unbatchable  # lazy: the batch APIs and aiohttp, only with --batch

            refuse_unbatchable([self.scenario, *self.variant_scenarios], [spec for spec, _ in self.shares])
        refuse_unscorable([self.scenario, *self.variant_scenarios], config.llm)
        if config.llm.base_url and not any(parse_spec(spec).provider_info.base_url for spec, _ in self.shares):
            raise BackendSpecError(f"--base-url is for openai: and anthropic: backends, and this experiment uses "
                                   f"{', '.join(redact(spec) for spec, _ in self.shares)}; drop it, or choose a backend "
                                   f"such as --backend openai:MODEL")
        load_user_prices()  # a table that does not read stops here, not at the first answer
        self.budget = Budget(max_calls=config.llm.max_calls, max_cost_usd=config.llm.max_cost_usd)
        if self.budget.max_cost_usd is not None:
            _require_prices([spec for spec, _ in self.shares], config.llm)
        rules = self.scenario.standin_part().rules
        self.backends = {spec: build_backend(spec, config.llm, self.budget, warn, rules=rules) for spec, _ in self.shares}
        if self.budget.limited and all(backend.immediate for backend in self.backends.values()):
            raise BackendSpecError("--max-calls and --max-cost limit requests to a model server, and the stand-in "
                                   "answers in process without any; drop them or choose a --backend")
        identity = self._identity()
        self._check_directory()
        self.estimate = read_estimate(config.out)
        self.lock = DirectoryLock.acquire(config.out)
        try:
            self._open_store(identity)
        except BaseException:
            self.lock.release()
            raise


    def _check_directory(self) -> None:
        out, resume = self.config.out, self.config.resume
        if out.exists() and not out.is_dir():
            raise OutputDirError(f"--out {out} is a file, not a directory; give a directory path")
        if resume and not Store.exists(out):
            raise OutputDirError(f"nothing to resume: {out} holds no {DATABASE}; check the path, or drop --resume "
                                 f"to start a new experiment there")
        refuse_linked_store(out)
        if resume and (out / DATABASE).stat().st_size == 0:
            raise DamagedStoreError(f"{out / DATABASE} is empty (truncated); nothing was changed: restore it from a "
                                    f"copy, or record into a new --out DIR")
        probe = out if out.exists() else next((parent for parent in out.parents if parent.exists()), Path("."))
        if not os.access(probe, os.W_OK | os.X_OK):
            raise OutputDirError(f"cannot write to {probe} (permission denied); choose a writable --out DIR")

    def _open_store(self, identity: dict[str, Any]) -> None:
        config = self.config
        if config.resume:
            recorded = self._check_resumable(identity)
        if Store.exists(config.out):
            store = Store(config.out, checked=config.resume)  # (a resume's checks read it whole just now)
            if not config.resume and store.experiment() and store.runs():
                if _holds_results(store):
                    store.close()
                    raise OutputDirError(f"{config.out} already holds results; pass --resume to continue them or --out NEW_DIR")
                for row in store.runs():  # runs that failed before recording anything (a typo in a template)
                    store.discard_run(row["run"])
            self.store = store
            if config.resume and self.budget.limited:  # the budget is the experiment's, not this session's
                self.budget.restore(recorded.get("budget_spent") or {})
        else:
            self.store = Store(config.out)
        if self.config.record is None:
            self.config = dataclasses.replace(self.config, record=MOVES)
        if not config.resume:  # a directory left by an experiment that recorded no run: start afresh
            with contextlib.suppress(Exception):
                self.store.connection.execute("DELETE FROM experiment WHERE key = 'budget_spent'")
        if self.budget.limited:
            store = self.store
            self.budget.journal = lambda spent: store.set_experiment({"budget_spent": spent})
        self.store.set_experiment({
            **identity,
            "runs": max(self.config.replicates, self.store.experiment().get("runs", 0)),
            "scenario_file": config.scenario_file,
            **({"scenario_sha256": digest} if config.scenario_file and (digest := scenario_digest(config.scenario_file))
               else {}),
            "code_version": self.code_version,
            "checkpoint_format": CHECKPOINT_FORMAT,
            # The texts the runs' prompts were sent with: a resume adds a template, never rewrites one.
            "prompt_templates": self._templates() | (self.store.experiment().get("prompt_templates") or {}
                                                     if config.resume else {}),
            "scenario_class": self.scenario.describe()["class"],
            "population": [[spec, count] for spec, count in self.shares],
            "llm_options": _describe_options(self.config.llm),
            "prices": self.prices(),
            "record": self.config.record,
        })
        if self.estimate is not None and not self.store.experiment().get("estimate"):
            self.store.set_experiment({"estimate": self.estimate})
        self.estimate = self.store.experiment().get("estimate") or self.estimate

    def _resolve_record(self, recorded: str) -> None:
        """A resume records what its runs recorded so far (`--record` may only repeat it): a
        run is one level from its first encounter to its last."""
        given = self.config.record
        if given is not None and given != recorded:
            raise ParameterError(f"{self.config.out} records its runs at --record {recorded} and a resume continues at "
                                 f"that level; drop --record {given}, or start afresh with --out NEW_DIR")
        self.config = dataclasses.replace(self.config, record=recorded)

    def _check_resumable(self, identity: dict[str, Any]) -> dict[str, Any]:
        """Everything a resume relies on, on the store opened read-only, before anything under
        the directory changes: the store whole (`Store.read_only`), the same experiment, the
        same scenario file, prompts and checkpoints' format, every run's row and checkpoint, the
        count of runs. Returns what the experiment recorded."""
        config = self.config
        with Store.read_only(config.out, resume=True) as store:
            recorded = store.experiment()
            if "scenario" not in recorded:  # (a store always records its own version)
                raise OutputDirError(f"nothing to resume: {config.out / DATABASE} records no experiment; drop --resume")
            if store.written_version < SAME_DRAWS_SINCE:
                raise OutputDirError(
                    f"{config.out} was recorded by an agentsim that drew option orders differently (store version "
                    f"{store.written_version}, this one writes {SAME_DRAWS_SINCE} and later), so its runs cannot be "
                    f"continued; finish them with the agentsim that started them, or drop --resume and use --out NEW_DIR")
            # (the seed and the backend first: a seed also draws the name pool, so name the cause)
            for key, value in sorted(identity.items(), key=lambda item: item[0] not in ("scenario", "seed", "backend")):
                if recorded.get(key) != value:
                    raise OutputDirError(
                        f"{config.out} holds a different experiment ({_difference(key, recorded.get(key), value)}); "
                        f"give the recorded value, or leave out the scenario file and every --set to continue with "
                        f"the recorded ones (python -m agentsim --resume --out {config.out}), or drop --resume and "
                        f"use --out NEW_DIR")
            check_scenario_digest(recorded, config.scenario_file, out=config.out, changed=config.scenario_changed)
            self._resolve_record(recorded_level(recorded))
            self._check_templates(recorded.get("prompt_templates") or {}, store)
            self._check_code_version(recorded)
            store.verify_checkpoints()
            self._check_checkpoints(store)
            self._check_run_count(int(recorded.get("runs", 0)), store)
        return recorded

    def _check_run_count(self, recorded: int, store: Store) -> None:
        """A resume continues the runs the experiment recorded, no more and no fewer: the
        count changes only when asked by name (`--add-runs K`), never because a scenario
        file's RUNS or a --runs differs (with a paid model, runs nobody asked for cost money)."""
        config, cells = self.config, max(1, len(self.config.variants))
        wanted = recorded + config.add_runs * cells
        if recorded and config.replicates != wanted:
            store.close()
            given, had = config.runs, recorded // cells
            if config.add_runs:
                raise ParameterError(f"--add-runs {config.add_runs} adds to the {had} runs recorded in {config.out}; "
                                     f"drop --runs {given}")
            raise ParameterError(f"{config.out} records {had} run{'s' if had != 1 else ''} and --resume continues exactly "
                                 f"those; --runs {given} "
                                 f"would change that count: drop --runs to continue them, or add replicates with "
                                 f"--resume --add-runs K (recorded runs are never dropped)")

    def _check_checkpoints(self, store: Store) -> None:
        """Every run a resume continues reads back whole, before anything is written: its row
        as the runs table has it, its checkpoint restored into the run built afresh (its
        layout, types, ranges and counters: `model.checked_state`), and the encounters the
        checkpoint says were completed are the ones the store holds. One line naming the run
        otherwise, and the directory as it was."""
        from .model import BackendShare, PopulationModel  # lazy: Mesa; the session builds no model otherwise

        recorded_runs = store.experiment().get("runs", 0)
        encounters = dict(store.rows("SELECT run, COUNT(*) FROM encounters GROUP BY run"))
        marks = dict(store.rows("SELECT run, t FROM checkpoints"))
        for row in store.runs():
            run = row["run"]
            if type(run) is not int or not 1 <= run <= max(recorded_runs, self.config.replicates) or row["status"] not in RUN_STATUSES:
                raise DamagedStoreError(f"{store.path}: the runs table's row {run!r} is damaged (run {run!r}, status "
                                        f"{row['status']!r}); {_NOTHING_CHANGED}")
            refuse_inconsistent_row(store, row)
            blob = store.checkpoint(run)
            if row["status"] == "done":
                continue
            if blob is None:
                if encounters.get(run, 0):  # (a run is forgotten only if it had recorded nothing: `starting_point`)
                    raise DamagedStoreError(f"{store.path}: run {run} records {encounters[run]} encounters and no "
                                            f"checkpoint to continue them from; {_NOTHING_CHANGED}")
                continue
            scenario, seed, _ = run_cell(self.scenario, self.variant_scenarios, self.config.seed, run - 1)
            model = PopulationModel(scenario, seed=seed, replicate=run - 1, run_id=run,
                                    backends=[BackendShare(self.backends[spec], count) for spec, count in self.shares])
            try:
                model.restore(blob)
            except CheckpointError as error:
                raise DamagedStoreError(f"{store.path}: the checkpoint of run {run} is damaged ({error}); "
                                        f"{_NOTHING_CHANGED}") from None
            except Exception as error:  # a game's own restore refusing what it was given
                raise DamagedStoreError(f"{store.path}: the checkpoint of run {run} is damaged ({type(error).__name__}: "
                                        f"{redact(str(error))[:200]}); {_NOTHING_CHANGED}") from None
            finally:
                model.close()
            held = encounters.get(run, 0)
            if held != model.completed if self.config.record == MOVES else held > model.completed:
                raise DamagedStoreError(f"{store.path}: the checkpoint of run {run} says {model.completed} encounters were "
                                        f"completed and the store holds {encounters.get(run, 0)}; {_NOTHING_CHANGED}")
            if marks.get(run) != model.encounters_begun:
                raise DamagedStoreError(f"{store.path}: the checkpoint of run {run} is marked t={marks.get(run)!r} and its "
                                        f"state began {model.encounters_begun} encounters; {_NOTHING_CHANGED}")
            refuse_unruled_stop(store, run, model)

    def _shares(self) -> list[tuple[str, int | None]]:
        """Which backend each agent uses: one for all, or the population's counts in order."""
        if not self.config.population:
            return [(self.config.backend, None)]
        shares = parse_population(self.config.population)
        total = sum(count for _, count in shares)
        # Every variant of a grid must fit the population, not only the base scenario.
        sizes = sorted({agents for scenario in [self.scenario, *self.variant_scenarios]
                        if isinstance(agents := getattr(scenario.params, "agents", None), int)})
        if sizes and sizes != [total]:
            where = "the scenario has" if len(sizes) == 1 else "the grid's variants have"
            raise BackendSpecError(f"the population's counts add up to {total} but {where} "
                                   f"agents={', '.join(map(str, sizes))}; make them add up or --set agents={total}")
        return list(shares)

    def _identity(self) -> dict[str, Any]:
        identity = {
            "scenario": self.scenario.name,
            "params": self.scenario.params.as_dict(),
            "standin": self.scenario.standin.as_dict(),  # the stand-in's settings: they change its answers
            "seed": self.config.seed,
            "backend": self.config.backend_label,
        }
        if self.config.variants:
            identity["variants"] = [dict(variant) for variant in self.config.variants]
        return identity

    def _templates(self) -> dict[str, str]:
        templates = {}
        for scenario in [self.scenario, *self.variant_scenarios]:
            template = getattr(scenario, "template", None)
            if template is not None:
                templates[template.name] = template.text
        return templates

    def _check_templates(self, recorded: dict[str, str], store: Store) -> None:
        """A resume sends the prompts its runs were sent with: a template whose text changed
        since (its file edited) would make the rest of each run another experiment."""
        for name, text in self._templates().items():
            if name in recorded and recorded[name] != text:
                store.close()
                raise OutputDirError(f"the prompt template '{name}' differs from the one the runs in {self.config.out} "
                                     f"were sent with (its file was edited since); restore it to continue them, or start "
                                     f"afresh with --out NEW_DIR")

    def _check_code_version(self, recorded: dict[str, Any]) -> None:
        """A resume by another agentsim: its checkpoints' format was checked when the store
        opened (`Store.verify_checkpoints` refuses another one); the same format continues,
        with one line naming both versions, since the rest of each run is this code's."""
        written = recorded.get("code_version")
        if written and written != self.code_version:
            self.notices.append(f"{self.config.out} was recorded by agentsim {written} and is continued by agentsim "
                                f"{self.code_version} (its checkpoints read back in format {CHECKPOINT_FORMAT}): the "
                                f"runs' later rounds come from this version's code")

    def runs_at_once(self) -> int:
        """Runs in memory at once (fewer for large populations): the rest wait their turn."""
        agents = getattr(self.scenario.params, "agents", 0)
        return max(1, min(RUNS_AT_ONCE, LIVE_AGENTS // agents if isinstance(agents, int) and agents else RUNS_AT_ONCE))

    def standin_ignored(self) -> dict[str, Any]:
        """The parameters this experiment changes that the stand-in's rule does not read (each
        with its value; a grid's variants included), where any agent answers on the stand-in."""
        if self.config.scenario.rule_agents or not any(is_stand_in(spec) for spec, _ in self.shares):
            return {}
        ignored: dict[str, Any] = {}
        for scenario in [self.scenario, *self.variant_scenarios]:
            try:
                defaults = type(scenario.params)().as_dict()
            except UserError:  # parameters with no valid defaults: nothing to compare against
                continue
            values = scenario.params.as_dict()
            for key in scenario.standin_part().ignores:
                if key in values and values[key] != defaults.get(key):
                    ignored.setdefault(key, values[key])
        return ignored

    def stand_in(self) -> bool:
        """Whether every agent answers on the built-in stand-in (rule agents ask no backend):
        what summary.json's and the log's `stand_in` say; `backend_shares` says it per backend."""
        return not self.config.scenario.rule_agents and all(is_stand_in(spec) for spec, _ in self.shares)

    def backend_shares(self) -> list[dict[str, Any]]:
        """Each backend of the population: its spec, how many agents use it (None: every agent
        no other share claims) and whether it is the built-in stand-in."""
        if self.config.scenario.rule_agents:
            return []
        return [{"spec": redact(spec), "agents": count, "stand_in": is_stand_in(spec)} for spec, count in self.shares]

    async def close(self, stopped_by: BaseException | None) -> None:
        """The experiment's end, however it ended (`stopped_by`: what stopped it, if anything):
        the budget spent and summary.json written, the backends, the store and the lock let go."""
        try:
            if self.budget.limited:
                self.store.set_experiment({"budget_spent": self.budget.spent()})
            self.write_summary(stopped_by)
            for backend in self.backends.values():
                await backend.aclose()
        finally:
            self.store.close()
            self.lock.release()

    def write_summary(self, stopped_by: BaseException | None) -> None:
        """summary.json, runs.csv and by_model.csv, from what the store holds."""
        experiment = self.store.experiment()
        # Each model's choices are counted from the recorded decisions: all of them at --record
        # moves; at rounds and summary the store keeps a sample or none, which is no count of a model's.
        by_model = self.store.by_model() if self.config.record in (None, MOVES) else {}
        runs: list[dict[str, Any]] = [row["summary"] | {"status": row["status"]} for row in self.store.runs() if row["summary"]]
        for run in runs:
            counted = by_model.get(run.get("run", 0), {})
            if sum(entry["kind"] == "llm" for entry in counted.values()) > 1:  # a mixed population
                run["by_model"] = merge_by_model(counted, run.get("by_model"))
        document: dict[str, Any] = {
            "scenario": experiment.get("scenario"),
            "backend": experiment.get("backend"),
            "stand_in": self.stand_in(),
            "backends": self.backend_shares(),
            "rule_agents": self.config.scenario.rule_agents,
            "seed": experiment.get("seed"),
            "params": experiment.get("params"),
            "code_version": experiment.get("code_version"),
            "record": self.config.record or MOVES,
            "runs": runs,
        }
        if document["stand_in"]:
            document["standin"] = experiment.get("standin")
        ignored = self.standin_ignored()
        if ignored:
            document["standin_ignored"] = ignored
        document["by_model"] = total_by_model([by_model.get(run.get("run", 0), {}) for run in runs
                                               if run.get("status") == "done"])
        document["usage_by_backend"] = sum_usage(runs)
        document["prices"] = experiment.get("prices") or self.prices()
        if experiment.get("estimate"):  # `estimate --out DIR` before the run: what was expected beside what was spent
            document["estimate"] = experiment["estimate"]
        document["limiter_by_backend"] = self.limiter_stats()
        if stopped_by is not None:
            status, reason = run_outcome(stopped_by)
            document["stopped"] = {"status": status, "stop_reason": reason,
                                   "message": redact(str(stopped_by)) or type(stopped_by).__name__}
        if self.budget.limited:
            document["budget"] = {"stopped_by": self.budget.reason, "max_calls": self.budget.max_calls,
                                  "max_cost_usd": self.budget.max_cost_usd, **self.budget.spent()}
        path = self.config.out / SUMMARY
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(document, indent=2, sort_keys=False), encoding="utf-8")
        temporary.replace(path)
        # The same rows as `Results.runs()`: the runs table's columns (times included), then the summary.
        write_csv(self.config.out / RUNS_CSV, run_table_rows(row for row in self.store.runs() if row["summary"]),
                  first=RUN_COLUMNS)
        write_csv(self.config.out / BY_MODEL_CSV, by_model_rows(by_model), first=BY_MODEL_COLUMNS)

    def prices(self) -> dict[str, Any]:
        """Each hosted model's price as the accounts use it, and where it came from (genai-prices,
        AGENTSIM_PRICES, register_price): a cost figure can be checked against its price later."""
        found: dict[str, Any] = {}
        for text, _ in self.shares:
            spec = parse_spec(text)
            if spec.provider_info.billed:
                price = backend_price(text, self.config.llm)
                found[spec.target] = price.as_dict() if price is not None else None
        return found

    def limiter_stats(self) -> dict[str, Any]:
        if self.cluster_limiter_stats is not None:
            return self.cluster_limiter_stats
        stats = {}
        for label, backend in self.backends.items():
            limiter = layer(backend, LimitedModel)
            if isinstance(limiter, LimitedModel):
                stats[label] = {"max_in_flight_seen": limiter.max_seen, "cap": limiter.limits.max_in_flight,
                                "final_limit": round(limiter.limit, 2), "cuts": limiter.cuts,
                                "latency_cuts": limiter.queueing.cuts if limiter.queueing is not None else 0,
                                "mean_in_flight": round(limiter.mean_in_flight(), 2)}
        return stats


def refuse_inconsistent_row(store: Store, row: dict[str, Any]) -> None:
    """A run's row as a run writes it: its status and stop reason those its summary was written
    with (one call writes the three), none of them before the run ended (`running`)."""
    summary, run = row["summary"], row["run"]
    written = (summary.get("status", row["status"]), summary.get("stop_reason", row["stop_reason"])) if summary else \
        ("running", None)
    if (row["status"], row["stop_reason"]) != written:
        raise DamagedStoreError(f"{store.path}: the runs table's row {run} is damaged (status {row['status']!r} and stop "
                                f"reason {row['stop_reason']!r}, its summary written with {written[0]!r} and "
                                f"{written[1]!r}); {_NOTHING_CHANGED}")


def refuse_unruled_stop(store: Store, run: int, model: Any) -> None:
    """A restored run stopped (`stop_reason`) exactly when its scenario's stop rule says so of
    the state restored: a reason the rule does not give would end the run where it never
    stopped, none where it gives one would play it past its stop."""
    try:
        ruled = model.scenario.stop_reason(model)
    except Exception as error:  # a rule that cannot read the restored state: the state is not the run's
        raise DamagedStoreError(f"{store.path}: the checkpoint of run {run} is damaged (its stop rule fails on it: "
                                f"{type(error).__name__}); {_NOTHING_CHANGED}") from None
    if (model.stop_reason is None) != (ruled is None):
        raise DamagedStoreError(f"{store.path}: the checkpoint of run {run} is damaged (it says the run stopped for "
                                f"{model.stop_reason!r}, and the scenario's rule says {ruled!r} of its state); "
                                f"{_NOTHING_CHANGED}")


def recorded_runs(recorded: dict[str, Any], cells: int, out: Path) -> int | None:
    """The runs per cell a resume continues, from what the experiment recorded (None: none
    recorded); a count no experiment could have is the store's damage, not a --runs."""
    count = recorded.get("runs")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    if count // cells > MAX_RUNS:
        raise DamagedStoreError(f"{out / DATABASE} records {count} runs, more than the {MAX_RUNS} an experiment holds "
                                f"({'per variant' if cells > 1 else 'at most'}): it is damaged; {_NOTHING_CHANGED}")
    return count // cells


def scenario_digest(path: str | Path) -> str | None:
    """The SHA-256 of a scenario file's content (what a resume checks it runs), None if unreadable."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def check_scenario_digest(recorded: dict[str, Any], scenario_file: str | Path, *, out: Path, changed: bool) -> None:
    """A resume runs the scenario file its runs started with: one whose content differs from the
    digest recorded then is refused unless `changed` says to continue with it as it is now; the
    file the store names is checked before it is loaded (agentsim/configure.py), one the user
    named before anything under `out` is written (`Session`). A store from before digests were
    recorded, or a run of no file (the Python API's scenario object), has nothing to compare."""
    digest = recorded.get("scenario_sha256")
    if changed or not scenario_file or not isinstance(digest, str):
        return
    now = scenario_digest(scenario_file)
    if now != digest:
        raise OutputDirError(f"the scenario file {scenario_file} is not the one the runs in {out} started with (its "
                             f"content changed since: SHA-256 {str(now)[:12]}, recorded {digest[:12]}); restore it to "
                             f"continue them, or add --scenario-changed to continue them with the file as it is now")


def refuse_linked_store(out: Path) -> None:
    """Refuse an output directory whose database is a link (symbolic or hard) to a file that
    another directory may name: the one-writer lock is the directory's, so two directories
    sharing one database would have two writers at once, each holding its own lock."""
    database = out / DATABASE
    if database.is_symlink() or (database.is_file() and database.stat().st_nlink > 1):
        other = (f"a link to {database.resolve()}" if database.is_symlink() else
                 "a hard link (the same file has another name)")
        raise OutputDirError(f"{database} is {other}; agentsim writes only a database of its own directory: copy "
                             f"the file instead of linking it, or give its own directory as --out")


def _render_every_prompt(codec: Any, seed: int) -> None:
    """A probe's messages and the reminder a re-ask would send (re-asks are rare: a field of
    the reminder that nothing fills would otherwise fail mid-run)."""
    for _request, situation in codec.readable_probes(1, seed):
        codec.reminder(situation, codec.parse("", situation))



def _without_credentials(config: ExperimentConfig) -> ExperimentConfig:
    """The config with `user:password@` taken out of every URL it names: credentials are used
    to connect (llm/specs.py reads them back by host) and never recorded or shown."""
    llm = config.llm
    if llm.base_url:
        llm = dataclasses.replace(llm, base_url=strip_credentials(llm.base_url))
    return dataclasses.replace(config, backend=strip_credentials(config.backend),
                               population=strip_credentials(config.population), llm=llm)


def _require_prices(specs: list[str], options: BackendOptions) -> None:
    """--max-cost is hard only if every model it pays for has a price: an unknown one would
    cost nothing in the budget's eyes."""
    for text in specs:
        spec = parse_spec(text)
        if spec.provider_info.billed and backend_price(text, options) is None:
            raise BackendSpecError(f"--max-cost needs the price of every model, and '{spec.target}' (backend "
                                   f"'{redact(text)}') has none in genai-prices' table or AGENTSIM_PRICES: give it with {PRICES_HELP}, "
                                   f"or drop --max-cost")


def _describe_options(options: BackendOptions) -> dict[str, Any]:
    """The backend options as recorded: limits and endpoints, never a key."""
    limits = options.limits
    return {"base_url": options.base_url, "timeout_s": options.timeout_s, "max_attempts": options.retry.max_attempts,
            "deadline_s": options.retry.deadline_s, "max_in_flight": limits.max_in_flight, "rpm": limits.rpm,
            "tpm": limits.tpm, "adaptive": limits.adaptive, "cache": options.cache, "replay": options.replay,
            "max_calls": options.max_calls, "max_cost_usd": options.max_cost_usd}


def code_version() -> str:
    """The package version, with the git commit when running from a checkout."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                                cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{__version__}+{commit}" if commit else __version__


def fresh_directory(base: Path) -> Path:
    """`base/YYYYMMDD-HHMMSS`, the default output directory, with `-2`, `-3`... when an
    experiment of the same second took it (the command line and the Python API alike)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path, number = base / stamp, 1
    while path.exists():
        number += 1
        path = base / f"{stamp}-{number}"
    return path
