"""An experiment: K seeded replicates of a scenario, run concurrently in one event loop and
recorded into one output directory, with checkpoints, resume and a clean interrupt."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import math
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from . import __version__
from .checkpoints import CHECKPOINT_FORMAT
from .errors import (
    BackendFailedError,
    BackendSpecError,
    DamagedStoreError,
    OutputDirError,
    ParameterError,
    RunStopped,
    UserError,
)
from .figures import LiveFigures
from .flat import BY_MODEL_COLUMNS, BY_MODEL_CSV, RUNS_CSV, by_model_rows, run_rows, write_csv
from .llm.accounting import Budget
from .llm.base import LanguageModel
from .llm.health import fallback_line
from .llm.limiter import LimitedModel
from .llm.prices import PRICES_HELP, priced
from .llm.specs import BackendOptions, build_backend, parse_population, parse_spec
from .llm.stack import REMOTE, layer
from .model import BackendShare, PopulationModel
from .model_fitness import refuse_unscorable, require_readable
from .scenario import Scenario
from .secrets import redact, strip_credentials
from .store import DATABASE, SAME_DRAWS_SINCE, Recorder, Store
from .variants import variant_cell, variant_scenario

SUMMARY = "summary.json"
MIN_SEED, MAX_SEED = 0, 2**63 - 1  # numpy's and Mesa's generators take seeds >= 0
MAX_AGENTS = 100_000  # one run's population that fits a workstation's memory with its records
MAX_RUNS = 10_000
RUNS_AT_ONCE = 256  # runs in memory at once (fewer for large populations: LIVE_AGENTS in all)
LIVE_AGENTS = 1_000_000
LOCK = ".agentsim.lock"
LOCAL, RAY = "local", "ray"
EXECUTORS = (LOCAL, RAY)


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
RULE_AGENTS = "rule agents"


class RunSink(Protocol):
    """Where a run's records go as it runs: the store (`StoreSink`), or, from a Ray worker, the
    driver that owns the store (agentsim/distributed/worker.py). Rows and checkpoint travel
    together in `commit`, so what reaches the file is always a state a run resumes from."""

    def begin(self, run: int, *, replicate: int, seed: int, backend: str, agents: list[tuple[int, str, str]]) -> None: ...

    def resumed(self, run: int) -> None: ...

    def commit(self, recorder: Recorder, checkpoint: bytes, t: int) -> None: ...

    def finish(self, run: int, status: str, *, stop_reason: str | None, summary: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class StoreSink:
    """A run's records straight into the experiment's store (the in-process executor)."""

    store: Store

    def begin(self, run: int, *, replicate: int, seed: int, backend: str, agents: list[tuple[int, str, str]]) -> None:
        self.store.begin_run(run, replicate=replicate, seed=seed, backend=backend, agents=agents)

    def resumed(self, run: int) -> None:
        self.store.set_status(run, "running")

    def commit(self, recorder: Recorder, checkpoint: bytes, t: int) -> None:
        self.store.commit(recorder, checkpoint, t)

    def finish(self, run: int, status: str, *, stop_reason: str | None, summary: dict[str, Any]) -> None:
        self.store.set_status(run, status, stop_reason=stop_reason, summary=summary)


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    scenario: Scenario[Any, Any, Any]
    out: Path
    backend: str = "stand-in"
    runs: int = 1
    seed: int = 0
    resume: bool = False
    checkpoint_seconds: float = 1.0
    scenario_file: str = ""
    population: str = ""  # "SPEC=COUNT,SPEC=COUNT": a mixed-model population (overrides backend)
    llm: BackendOptions = field(default_factory=BackendOptions)
    # Parameter variants (a grid of conditions): each is a dict of parameter changes; every
    # variant runs `runs` seeded replicates (see `Experiment.run_cell`). Empty: the scenario as is.
    variants: tuple[dict[str, Any], ...] = ()
    # Where the runs execute: "local" (this process's event loop) or "ray" (Ray tasks, on the
    # cluster at `ray_address`, or on a Ray started in process when it is empty).
    executor: str = LOCAL
    ray_address: str = ""
    # The CPUs Ray sets aside for each run: 1 for runs that compute (the stand-in, rule
    # agents); a fraction for runs that mostly wait on a model server, so that more of them
    # share a worker node's cores and keep the servers busy.
    cpus_per_run: float = 1.0

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ParameterError(f"--executor must be one of {', '.join(EXECUTORS)} (got {self.executor!r})")
        if not (math.isfinite(self.cpus_per_run) and 0.01 <= self.cpus_per_run <= 1024):
            raise ParameterError(f"--cpus-per-run must be a number of CPUs from 0.01 to 1024 (got {self.cpus_per_run})")

    @property
    def backend_label(self) -> str:
        """What the store, the summary and the view name as the experiment's backend: rule
        agents (theory baselines) ask no backend, so they are not called the stand-in."""
        if self.scenario.rule_agents:
            return RULE_AGENTS
        return self.population or self.backend


_FLAGS = {"seed": "--seed", "backend": "--backend/--population", "scenario": "the scenario file"}


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


@dataclass(frozen=True)
class RunView:
    """An immutable picture of one run for the live view and the log lines."""

    run: int
    seed: int
    status: str
    rounds_done: int
    max_rounds: int
    interactions: int
    stop_reason: str | None
    metrics: LiveFigures
    usage: dict[str, Any]
    calls_per_second: float
    cell: str = ""  # the run's VARIANTS cell ("condition=nl, memory_length=0"), empty outside a grid
    worker: str = ""  # where a Ray sweep runs it ("host:pid"), empty in process


class View(Protocol):
    def start(self, experiment: dict[str, Any]) -> None: ...

    def update(self, runs: list[RunView], *, final: bool = False) -> None: ...

    def stop(self) -> None: ...

    # Optional: `warn(message)`, a backend's warning as it happens (the live view and the log
    # lines show it; a view without it shows none).


def run_outcome(error: BaseException) -> tuple[str, str]:
    """The status and stop reason a run records when `error` stops it."""
    if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)):
        return "interrupted", "interrupted"
    if isinstance(error, RunStopped):
        return error.status, error.reason
    if isinstance(error, UserError):
        return "failed", "user_error"
    return "failed", "error"


@dataclass
class Experiment:
    config: ExperimentConfig
    view: View
    scenario: Scenario[Any, Any, Any] = field(init=False)
    store: Store = field(init=False)
    backends: dict[str, LanguageModel] = field(init=False, default_factory=dict)
    shares: list[tuple[str, int | None]] = field(init=False, default_factory=list)
    budget: Budget = field(init=False)
    variant_scenarios: list[Scenario[Any, Any, Any]] = field(init=False, default_factory=list)
    views: dict[int, RunView] = field(init=False, default_factory=dict)
    summaries: dict[int, dict[str, Any]] = field(init=False, default_factory=dict)
    lock: DirectoryLock = field(init=False)
    stopped_by: BaseException | None = field(init=False, default=None)  # what stopped every run, if anything
    _last_draw: float = field(init=False, default=0.0)
    # The limiters' figures of a Ray sweep, from its cluster-wide limiter (agentsim/distributed).
    cluster_limiter_stats: dict[str, Any] | None = field(init=False, default=None)
    # Where each run of a Ray sweep ran: (host, worker pid) per worker it was sent to.
    cluster_workers: dict[int, list[tuple[str, int]]] = field(init=False, default_factory=dict)

    def open(self) -> None:
        """Check everything the user could get wrong, before any run starts (and, unless the
        output directory is new, before anything in it changes)."""
        config = self.config = _without_credentials(self.config)
        if not 1 <= config.runs <= MAX_RUNS:
            raise ParameterError(f"--runs must be between 1 and {MAX_RUNS} (got {config.runs}); run more as "
                                 f"separate experiments with --seed")
        if not MIN_SEED <= config.seed <= MAX_SEED - max(config.runs, 1):
            raise ParameterError(f"--seed must be a whole number from {MIN_SEED} to 2^63 - 1 - runs (got {config.seed})")
        if not (math.isfinite(config.checkpoint_seconds) and 0 <= config.checkpoint_seconds <= 86_400):
            raise ParameterError(f"--checkpoint-seconds must be a number of seconds from 0 to 86400 "
                                 f"(got {config.checkpoint_seconds})")
        self.variant_scenarios = [variant_scenario(config.scenario, variant, config.seed) for variant in config.variants]
        if config.variants:  # from here on, `runs` counts every variant's replicates
            self.config = config = dataclasses.replace(config, runs=config.runs * len(config.variants))
        self.scenario = config.scenario.for_experiment(config.seed)
        for scenario in [self.scenario, *self.variant_scenarios]:
            agents = getattr(scenario.params, "agents", None)
            if isinstance(agents, int) and agents > MAX_AGENTS:
                raise ParameterError(f"agents={agents} is more than one run can hold in memory (at most {MAX_AGENTS}); "
                                     f"--set agents={MAX_AGENTS} or fewer")
        for scenario in [self.scenario, *self.variant_scenarios]:  # a template naming a field nobody fills: now, not at a call
            if scenario.codec is not None:
                scenario.codec.readable_probes(1, config.seed)
        self.shares = self._shares()
        refuse_unscorable([self.scenario, *self.variant_scenarios], config.llm)
        if config.llm.base_url and not any(parse_spec(spec).provider in ("openai", "anthropic") for spec, _ in self.shares):
            raise BackendSpecError(f"--base-url is for openai: and anthropic: backends, and this experiment uses "
                                   f"{', '.join(redact(spec) for spec, _ in self.shares)}; drop it, or choose a backend "
                                   f"such as --backend openai:MODEL")
        self.budget = Budget(max_calls=config.llm.max_calls, max_cost_usd=config.llm.max_cost_usd)
        if self.budget.max_cost_usd is not None:
            _require_prices([spec for spec, _ in self.shares])
        self.backends = {spec: build_backend(spec, self.scenario, config.llm, self.budget, self._warn)
                         for spec, _ in self.shares}
        if self.budget.limited and all(backend.immediate for backend in self.backends.values()):
            raise BackendSpecError("--max-calls and --max-cost limit requests to a model server, and the stand-in "
                                   "answers in process without any; drop them or choose a --backend")
        identity = self._identity()
        self._check_directory()
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
        if resume and (out / DATABASE).stat().st_size == 0:
            raise DamagedStoreError(f"{out / DATABASE} is empty (truncated); nothing was changed: restore it from a "
                                    f"copy, or record into a new --out DIR")
        probe = out if out.exists() else next((parent for parent in out.parents if parent.exists()), Path("."))
        if not os.access(probe, os.W_OK | os.X_OK):
            raise OutputDirError(f"cannot write to {probe} (permission denied); choose a writable --out DIR")

    def _open_store(self, identity: dict[str, Any]) -> None:
        config = self.config
        if Store.exists(config.out):
            store = Store(config.out, check_checkpoints=config.resume)
            recorded = store.experiment()
            if recorded and not config.resume and store.runs():
                store.close()
                raise OutputDirError(f"{config.out} already holds results; pass --resume to continue them or --out NEW_DIR")
            if config.resume and "scenario" not in recorded:  # (a store always records its own version)
                store.close()
                raise OutputDirError(f"nothing to resume: {config.out / DATABASE} records no experiment; drop --resume")
            if recorded and config.resume and store.written_version < SAME_DRAWS_SINCE:
                store.close()
                raise OutputDirError(
                    f"{config.out} was recorded by an agentsim that drew option orders differently (store version "
                    f"{store.written_version}, this one writes {SAME_DRAWS_SINCE} and later), so its runs cannot be "
                    f"continued; finish them with the agentsim that started them, or drop --resume and use --out NEW_DIR")
            # (the seed and the backend first: a seed also draws the name pool, so name the cause)
            for key, value in sorted(identity.items(), key=lambda item: item[0] not in ("scenario", "seed", "backend")):
                # (a directory whose experiment recorded no run yet is started afresh)
                if recorded and config.resume and recorded.get(key) != value:
                    store.close()
                    raise OutputDirError(
                        f"{config.out} holds a different experiment ({_difference(key, recorded.get(key), value)}); "
                        f"give the recorded value, or leave out the scenario file and every --set to continue with "
                        f"the recorded ones (python -m agentsim --resume --out {config.out}), or drop --resume and "
                        f"use --out NEW_DIR")
            if recorded and config.resume:
                self._check_templates(recorded.get("prompt_templates") or {}, store)
            self.store = store
            if config.resume and recorded.get("runs", 0) > config.runs:
                # A resume continues every run the experiment planned, not only the file's RUNS.
                self.config = dataclasses.replace(config, runs=recorded["runs"])
            if config.resume and self.budget.limited:  # the budget is the experiment's, not this session's
                self.budget.restore(recorded.get("budget_spent") or {})
        else:
            self.store = Store(config.out)
        if not config.resume:  # a directory left by an experiment that recorded no run: start afresh
            with contextlib.suppress(Exception):
                self.store.connection.execute("DELETE FROM experiment WHERE key = 'budget_spent'")
        if self.budget.limited:
            store = self.store
            self.budget.journal = lambda spent: store.set_experiment({"budget_spent": spent})
        self.store.set_experiment({
            **identity,
            "runs": max(self.config.runs, self.store.experiment().get("runs", 0)),
            "scenario_file": config.scenario_file,
            "code_version": code_version(),
            "checkpoint_format": CHECKPOINT_FORMAT,
            # The texts the runs' prompts were sent with: a resume adds a template, never rewrites one.
            "prompt_templates": self._templates() | (self.store.experiment().get("prompt_templates") or {}
                                                     if config.resume else {}),
            "scenario_class": self.scenario.describe()["class"],
            "population": [[spec, count] for spec, count in self.shares],
            "llm_options": _describe_options(self.config.llm),
        })

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

    def run_cell(self, replicate: int) -> tuple[Scenario[Any, Any, Any], int, int | None]:
        """The scenario, seed and variant index (None without variants) of a replicate."""
        if not self.variant_scenarios:
            return self.scenario, self.config.seed + replicate, None
        variant, seed = variant_cell(replicate, len(self.variant_scenarios), self.config.seed)
        return self.variant_scenarios[variant], seed, variant

    async def run(self) -> list[dict[str, Any]]:
        self.view.start({"scenario": self.scenario.name, "backend": self.config.backend_label, "seed": self.config.seed,
                         "runs": self.config.runs, "out": str(self.config.out), "stand_in": self.stand_in(),
                         "backends": self.backend_shares()})
        ignored = self.standin_ignored()
        if ignored:
            self._warn(f"the stand-in ignores {', '.join(f'{key}={value}' for key, value in ignored.items())}: "
                       "its rule does not read them, so on the stand-in they change nothing; a language model would see them")
        try:
            await require_readable([self.scenario, *self.variant_scenarios], self.backends, self.config.llm,
                                   self.config.seed)
            if self.config.executor == RAY:
                from .distributed.driver import run_on_ray  # Ray is an extra: imported only when asked for

                await run_on_ray(self)
            else:
                await self._run_here()
        finally:
            self.view.update(list(self.views.values()), final=True)
            self.view.stop()
            if self.budget.limited:
                self.store.set_experiment({"budget_spent": self.budget.spent()})
            self._write_summary()
            for backend in self.backends.values():
                await backend.aclose()
            self.store.close()
            self.lock.release()
        return [self.summaries[run] for run in sorted(self.summaries)]

    def runs_at_once(self) -> int:
        """Runs in memory at once (fewer for large populations): the rest wait their turn."""
        agents = getattr(self.scenario.params, "agents", 0)
        return max(1, min(RUNS_AT_ONCE, LIVE_AGENTS // agents if isinstance(agents, int) and agents else RUNS_AT_ONCE))

    async def _run_here(self) -> None:
        """Every replicate in this process's event loop (the default executor)."""
        gate = asyncio.Semaphore(self.runs_at_once())

        async def bounded(replicate: int) -> None:
            async with gate:
                await self._run_one(replicate)

        tasks = [asyncio.ensure_future(bounded(replicate)) for replicate in range(self.config.runs)]
        try:
            await asyncio.gather(*tasks)
        except BaseException as error:
            # One run failed (a refused key, a --replay miss, a failed backend, the budget) or we
            # were interrupted: stop the others too, each recording what it has and why, before
            # the store closes.
            if self.stopped_by is None:
                self.stopped_by = error
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _run_one(self, replicate: int) -> None:
        run = replicate + 1
        store = self.store
        recorded = {row["run"]: row for row in store.runs()}.get(run)
        if recorded is not None and recorded["status"] == "done":
            self.summaries[run] = recorded["summary"]
            return
        blob = store.checkpoint(run) if recorded is not None else None
        if recorded is not None and blob is None:
            store.discard_run(run)
        await self.drive(replicate, blob, StoreSink(store))

    async def drive(self, replicate: int, blob: bytes | None, sink: RunSink) -> None:
        """Run replicate `replicate` to its end, from checkpoint `blob` (None: from the start),
        handing its rows and status to `sink`: the store here, the driver from a Ray worker
        (agentsim/distributed). Whatever stops it, what resolved and what was in flight is
        committed with a checkpoint, so it resumes exactly."""
        config = self.config
        run = replicate + 1
        scenario, seed, _variant = self.run_cell(replicate)
        recorder = Recorder(run)
        model = PopulationModel(scenario, seed=seed, replicate=replicate, run_id=run,
                                backends=[BackendShare(self.backends[spec], count) for spec, count in self.shares],
                                on_resolved=recorder.add)
        if blob is not None:
            await model.scheduler.resume(model.restore(blob))
            sink.resumed(run)
        else:
            sink.begin(run, replicate=replicate, seed=seed, backend=config.backend_label,
                       agents=[(agent.index, agent.policy.kind, agent.policy.label) for agent in model.population])
        last_commit = time.monotonic()
        try:
            while not model.finished:
                await model.astep()
                self._collect_rounds(model, recorder)
                if time.monotonic() - last_commit >= config.checkpoint_seconds:
                    self._show(model, "running")
                    sink.commit(recorder, model.checkpoint(), model.encounters_begun)
                    last_commit = time.monotonic()
                else:
                    self._show(model, "running")
                await asyncio.sleep(0)  # lets Ctrl-C in between rounds of in-process policies
            await model.scheduler.drain()
            self._collect_rounds(model, recorder, everything=True)
            sink.commit(recorder, model.checkpoint(), model.encounters_begun)
            verdict = self._fallback_verdict(model)
            if verdict is not None:
                raise BackendFailedError(verdict)
            summary = self._summary(model)
            self.summaries[run] = summary
            self._show(model, "done")
            sink.finish(run, "done", stop_reason=summary["stop_reason"], summary=summary)
        except BaseException as error:
            # Keep what resolved and what was in flight (it resumes), whatever stopped us.
            if self.stopped_by is None:
                self.stopped_by = error
            cause = error if not isinstance(error, asyncio.CancelledError) else self.stopped_by
            blob = model.checkpoint()
            try:
                await asyncio.gather(*model.scheduler.cancel(), return_exceptions=True)
            except asyncio.CancelledError:
                pass  # the experiment cancels every run while this one stops: record it all the same
            sink.commit(recorder, blob, model.encounters_begun)
            status, reason = run_outcome(cause)
            summary = self._summary(model, status=status, stop_reason=reason)
            if status != "interrupted":
                summary["error"] = redact(str(cause)) or type(cause).__name__
            self.summaries[run] = summary
            self._show(model, status, stop_reason=reason)
            sink.finish(run, status, stop_reason=reason, summary=summary)
            raise

    def _fallback_verdict(self, model: PopulationModel) -> str | None:
        """Why a run that went to its end is not a result: the decisions of a model backend
        are mostly fallbacks (over --max-fallback-share, at any length: the breaker's window
        may never have filled)."""
        limit = self.config.llm.health.max_fallback_share
        judged = {backend.name for backend in self.backends.values() if getattr(backend, "health", None) is not None}
        for label, usage in model.usage.by_backend.items():
            if label in judged and usage.decisions and usage.fallbacks / usage.decisions > limit:
                return fallback_line(redact(label), usage.fallbacks, usage.decisions, limit, recent=False)
        return None

    def _collect_rounds(self, model: PopulationModel, recorder: Recorder, *, everything: bool = False) -> None:
        metrics = model.metrics
        if metrics is None:
            return
        pending_rounds = [encounter.round for encounter in model.scheduler.pending()]
        before = 1 << 62 if everything else min(pending_rounds + [model.rounds_done])
        for round_, stats in metrics.pop_rounds(before):
            recorder.add_round(round_, stats.as_dict())

    def _summary(self, model: PopulationModel, *, status: str = "done", stop_reason: str | None = None) -> dict[str, Any]:
        usage = model.usage.total()
        return {
            "run": model.run_id,
            "seed": model.seed,
            "replicate": model.replicate,
            "backend": self.config.backend_label,
            "status": status,
            "stop_reason": stop_reason or model.stop_reason or "max_rounds",
            "rounds": model.rounds_done,
            "interactions": model.completed,
            "calls": usage.calls,
            "invalid_replies": usage.invalid_replies,
            "reasks": usage.reasks,
            "fallbacks": usage.fallbacks,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost_usd": round(usage.cost_usd, 6),
            "cache_hits": usage.cache_hits,
            "retries": usage.retries,
            "errors": dict(usage.errors),
            "usage_by_backend": {label: backend.as_dict() for label, backend in model.usage.by_backend.items()},
            **self._variant(model),
            **model.scenario.run_summary(model),
        }

    def _variant(self, model: PopulationModel) -> dict[str, Any]:
        variant = self.run_cell(model.replicate)[2]
        return {} if variant is None else {"variant": variant, "variant_params": dict(self.config.variants[variant])}

    def _warn(self, message: str) -> None:
        """A backend's warning, as it happens: to the log and the live view."""
        warn = getattr(self.view, "warn", None)
        if warn is not None and self.stopped_by is None:  # not the echo of requests cancelled on the way out
            warn(redact(message))

    def _show(self, model: PopulationModel, status: str, *, stop_reason: str | None = None) -> None:
        usage = model.usage.total()
        elapsed = max(time.monotonic() - model.usage.started, 1e-9)
        self.views[model.run_id] = RunView(
            run=model.run_id, seed=model.seed, status=status, rounds_done=model.rounds_done,
            max_rounds=model.scenario.max_rounds(), interactions=model.completed,
            stop_reason=stop_reason or model.stop_reason or (None if status == "running" else "max_rounds"),
            metrics=model.scenario.live_figures(model), usage=usage.as_dict() | {"in_flight": usage.in_flight},
            calls_per_second=usage.calls / elapsed, cell=self._cell(model),
        )
        now = time.monotonic()
        if status != "running" or now - self._last_draw >= 0.25:
            self._last_draw = now
            self.view.update([self.views[run] for run in sorted(self.views)])

    def _cell(self, model: PopulationModel) -> str:
        variant = self.run_cell(model.replicate)[2]
        if variant is None:
            return ""
        return ", ".join(f"{key}={value}" for key, value in self.config.variants[variant].items())

    def standin_ignored(self) -> dict[str, Any]:
        """The parameters this experiment changes that the stand-in's rule does not read (each
        with its value; a grid's variants included), where any agent answers on the stand-in."""
        if self.config.scenario.rule_agents or not any(spec.startswith("stand-in") for spec, _ in self.shares):
            return {}
        ignored: dict[str, Any] = {}
        for scenario in [self.scenario, *self.variant_scenarios]:
            try:
                defaults = type(scenario.params)().as_dict()
            except UserError:  # parameters with no valid defaults: nothing to compare against
                continue
            values = scenario.params.as_dict()
            for key in scenario.standin_ignores():
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

    def _write_summary(self) -> None:
        experiment = self.store.experiment()
        by_model = self.store.by_model()
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
            "runs": runs,
        }
        if document["stand_in"]:
            document["standin"] = experiment.get("standin")
        ignored = self.standin_ignored()
        if ignored:
            document["standin_ignored"] = ignored
        document["by_model"] = total_by_model([by_model.get(run.get("run", 0), {}) for run in runs
                                               if run.get("status") == "done"])
        document["usage_by_backend"] = _sum_usage(runs)
        document["limiter_by_backend"] = self._limiter_stats()
        if self.stopped_by is not None:
            status, reason = run_outcome(self.stopped_by)
            document["stopped"] = {"status": status, "stop_reason": reason,
                                   "message": redact(str(self.stopped_by)) or type(self.stopped_by).__name__}
        if self.budget.limited:
            document["budget"] = {"stopped_by": self.budget.reason, "max_calls": self.budget.max_calls,
                                  "max_cost_usd": self.budget.max_cost_usd, **self.budget.spent()}
        path = self.config.out / SUMMARY
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(document, indent=2, sort_keys=False), encoding="utf-8")
        temporary.replace(path)
        write_csv(self.config.out / RUNS_CSV, run_rows(runs), first=("run", "seed", "replicate", "status"))
        write_csv(self.config.out / BY_MODEL_CSV, by_model_rows(by_model), first=BY_MODEL_COLUMNS)


    def _limiter_stats(self) -> dict[str, Any]:
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


def is_stand_in(spec: str) -> bool:
    """Whether a backend spec is the built-in stand-in (`stand-in` or `stand-in:LABEL`)."""
    return spec == "stand-in" or spec.startswith("stand-in:")


def merge_by_model(counted: dict[str, dict[str, Any]], family: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """One run's per-model breakdown: the decisions counted from the store (`Store.by_model`),
    with what the game family measures per model where its summary has a `by_model` (SIGN's
    early name, the commons' gains): then for the models the family names, so that each entry
    has the family's fields."""
    if not family:
        return {label: dict(entry) for label, entry in counted.items()}
    return {label: dict(counted.get(label, {})) | entry for label, entry in family.items() if isinstance(entry, dict)}


def total_by_model(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The experiment's per-model breakdown over its finished runs: decisions, fallbacks,
    answers and choices added up, the mean payoff over every answer (fallbacks left out), the
    agents of one run."""
    totals: dict[str, dict[str, Any]] = {}
    for run in runs:
        for label, entry in run.items():
            total = totals.setdefault(label, {"kind": entry.get("kind"), "runs": 0, "agents": 0, "decisions": 0,
                                              "fallbacks": 0, "answers": 0, "mean_payoff": None, "choices": {},
                                              "_payoff": 0.0})
            total["runs"] += 1
            total["agents"] = max(total["agents"], int(entry.get("agents") or 0))
            for key in ("decisions", "fallbacks", "answers"):
                total[key] += int(entry.get(key) or 0)
            if entry.get("mean_payoff") is not None:
                total["_payoff"] += entry["mean_payoff"] * int(entry.get("answers") or 0)
            for action, count in (entry.get("choices") or {}).items():
                total["choices"][action] = total["choices"].get(action, 0) + count
    for total in totals.values():
        payoff = total.pop("_payoff")
        total["mean_payoff"] = round(payoff / total["answers"], 6) if total["answers"] else None
    return totals


def _without_credentials(config: ExperimentConfig) -> ExperimentConfig:
    """The config with `user:password@` taken out of every URL it names: credentials are used
    to connect (llm/specs.py reads them back by host) and never recorded or shown."""
    llm = config.llm
    if llm.base_url:
        llm = dataclasses.replace(llm, base_url=strip_credentials(llm.base_url))
    return dataclasses.replace(config, backend=strip_credentials(config.backend),
                               population=strip_credentials(config.population), llm=llm)


def _require_prices(specs: list[str]) -> None:
    """--max-cost is hard only if every model it pays for has a price: an unknown one would
    cost nothing in the budget's eyes."""
    for text in specs:
        spec = parse_spec(text)
        if spec.provider in REMOTE and not priced(spec.target):
            raise BackendSpecError(f"--max-cost needs the price of every model, and '{spec.target}' (backend "
                                   f"'{redact(text)}') has none in agentsim's table: give it with {PRICES_HELP}, "
                                   f"or drop --max-cost")


def _sum_usage(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The experiment's usage per backend: the runs' counts added (latency stays per run)."""
    totals: dict[str, dict[str, Any]] = {}
    for run in runs:
        for label, usage in (run.get("usage_by_backend") or {}).items():
            total = totals.setdefault(label, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0,
                                              "cache_hits": 0, "retries": 0, "errors": {}})
            for key in ("calls", "prompt_tokens", "completion_tokens", "cost_usd", "cache_hits", "retries"):
                total[key] += usage.get(key, 0)
            for kind, count in (usage.get("errors") or {}).items():
                total["errors"][kind] = total["errors"].get(kind, 0) + count
    for total in totals.values():
        total["cost_usd"] = round(total["cost_usd"], 6)
    return totals


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
