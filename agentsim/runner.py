"""An experiment: K seeded replicates of a scenario, run concurrently in one event loop and
recorded into one output directory, with checkpoints, resume and a clean interrupt."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from . import __version__
from .errors import OutputDirError
from .llm.base import LanguageModel
from .llm.specs import build_backend
from .model import BackendShare, PopulationModel
from .scenario import Scenario
from .store import Recorder, Store
from .variants import variant_cell, variant_scenario

SUMMARY = "summary.json"


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    scenario: Scenario[Any]
    out: Path
    backend: str = "stand-in"
    runs: int = 1
    # A grid of conditions (a scenario file's VARIANTS, agentsim/variants.py): each a dict of
    # parameter changes that runs `runs` replicates. Empty: the scenario as it is.
    variants: tuple[dict[str, Any], ...] = ()
    seed: int = 0
    resume: bool = False
    checkpoint_seconds: float = 1.0
    scenario_file: str = ""


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
    metrics: dict[str, Any]
    usage: dict[str, Any]
    calls_per_second: float


class View(Protocol):
    def start(self, experiment: dict[str, Any]) -> None: ...

    def update(self, runs: list[RunView], *, final: bool = False) -> None: ...

    def stop(self) -> None: ...


@dataclass
class Experiment:
    config: ExperimentConfig
    view: View
    scenario: Scenario[Any] = field(init=False)
    store: Store = field(init=False)
    backends: dict[str, LanguageModel] = field(init=False, default_factory=dict)
    views: dict[int, RunView] = field(init=False, default_factory=dict)
    summaries: dict[int, dict[str, Any]] = field(init=False, default_factory=dict)
    variant_scenarios: list[Scenario[Any]] = field(init=False, default_factory=list)
    _last_draw: float = field(init=False, default=0.0)

    def open(self) -> None:
        """Check everything the user could get wrong, before any run starts."""
        config = self.config
        self.variant_scenarios = [variant_scenario(config.scenario, variant, config.seed) for variant in config.variants]
        if config.variants:  # from here on, `runs` counts every variant's replicates
            self.config = config = dataclasses.replace(config, runs=config.runs * len(config.variants))
        self.scenario = config.scenario.for_experiment(config.seed)
        self.backends = {config.backend: build_backend(config.backend, self.scenario)}
        identity = self._identity()
        identity |= {"variants": [dict(variant) for variant in config.variants]} if config.variants else {}
        if Store.exists(config.out):
            store = Store(config.out)
            recorded = store.experiment()
            if recorded and not config.resume:
                store.close()
                raise OutputDirError(f"{config.out} already holds results; pass --resume to continue them or --out NEW_DIR")
            for key, value in identity.items():
                if recorded and recorded.get(key) != value:
                    store.close()
                    raise OutputDirError(
                        f"{config.out} holds a different experiment ({key} differs); drop --resume and use --out NEW_DIR")
            self.store = store
        else:
            self.store = Store(config.out)
        self.store.set_experiment({
            **identity,
            "runs": max(config.runs, self.store.experiment().get("runs", 0)),
            "scenario_file": config.scenario_file,
            "code_version": code_version(),
            "prompt_templates": self._templates(),
            "scenario_class": self.scenario.describe()["class"],
        })

    def _identity(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name,
            "params": self.scenario.params.as_dict(),
            "seed": self.config.seed,
            "backend": self.config.backend,
        }

    def _templates(self) -> dict[str, str]:
        templates = {}
        for scenario in [self.scenario, *self.variant_scenarios]:
            template = getattr(scenario, "template", None)
            if template is not None:
                templates[template.name] = template.text
        return templates

    def run_cell(self, replicate: int) -> tuple[Scenario[Any], int, int | None]:
        """The scenario, seed and variant index (None without variants) of a replicate."""
        if not self.variant_scenarios:
            return self.scenario, self.config.seed + replicate, None
        variant, seed = variant_cell(replicate, len(self.variant_scenarios), self.config.seed)
        return self.variant_scenarios[variant], seed, variant

    async def run(self) -> list[dict[str, Any]]:
        with relaxed_gc():
            return await self._run()

    async def _run(self) -> list[dict[str, Any]]:
        self.view.start({"scenario": self.scenario.name, "backend": self.config.backend, "seed": self.config.seed,
                         "runs": self.config.runs, "out": str(self.config.out)})
        try:
            await asyncio.gather(*(self._run_one(replicate) for replicate in range(self.config.runs)))
        finally:
            self.view.update(list(self.views.values()), final=True)
            self.view.stop()
            self._write_summary()
            for backend in self.backends.values():
                await backend.aclose()
            self.store.close()
        return [self.summaries[run] for run in sorted(self.summaries)]

    async def _run_one(self, replicate: int) -> None:
        config, store = self.config, self.store
        run = replicate + 1
        scenario, seed, _variant = self.run_cell(replicate)
        recorded = {row["run"]: row for row in store.runs()}.get(run)
        if recorded is not None and recorded["status"] == "done":
            self.summaries[run] = recorded["summary"]
            return
        recorder = Recorder(run)
        model = PopulationModel(scenario, seed=seed, replicate=replicate, run_id=run,
                                backends=[BackendShare(self.backends[config.backend])], on_resolved=recorder.add)
        blob = store.checkpoint(run) if recorded is not None else None
        if recorded is not None and blob is None:
            store.discard_run(run)
            recorded = None
        if blob is not None:
            await model.scheduler.resume(model.restore(blob))
            store.set_status(run, "running")
        if recorded is None:
            store.begin_run(run, replicate=replicate, seed=seed, backend=config.backend,
                            agents=[(agent.index, agent.policy.kind, agent.policy.label) for agent in model.population])
        last_commit = time.monotonic()
        try:
            while not model.finished:
                await model.astep()
                self._collect_rounds(model, recorder)
                if time.monotonic() - last_commit >= config.checkpoint_seconds:
                    store.commit(recorder, model.checkpoint(), model.time)
                    last_commit = time.monotonic()
                self._show(model, "running")
                await asyncio.sleep(0)  # lets Ctrl-C in between rounds of in-process policies
            await model.scheduler.drain()
            self._collect_rounds(model, recorder, everything=True)
            store.commit(recorder, model.checkpoint(), model.time)
            summary = self._summary(model)
            store.set_status(run, "done", stop_reason=model.stop_reason or "max_rounds", summary=summary)
            self.summaries[run] = summary
            self._show(model, "done")
        except BaseException as error:
            # Keep what resolved and what was in flight (it resumes), whatever stopped us.
            blob = model.checkpoint()
            await asyncio.gather(*model.scheduler.cancel(), return_exceptions=True)
            store.commit(recorder, blob, model.time)
            status = "interrupted" if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)) else "failed"
            summary = self._summary(model) | {"status": status}
            store.set_status(run, status, stop_reason=type(error).__name__, summary=summary)
            self.summaries[run] = summary
            self._show(model, status)
            raise

    def _collect_rounds(self, model: PopulationModel, recorder: Recorder, *, everything: bool = False) -> None:
        metrics = model.metrics
        if metrics is None or not hasattr(metrics, "pop_rounds"):
            return
        pending_rounds = [encounter.round for encounter in model.scheduler.pending()]
        before = 1 << 62 if everything else min(pending_rounds + [model.rounds_done])
        for round_, stats in metrics.pop_rounds(before):
            recorder.add_round(round_, stats.as_dict())

    def _summary(self, model: PopulationModel) -> dict[str, Any]:
        usage = model.usage.total()
        return {
            "run": model.run_id,
            "seed": model.seed,
            "replicate": model.replicate,
            "backend": self.config.backend,
            "status": "done",
            "stop_reason": model.stop_reason or "max_rounds",
            "rounds": model.rounds_done,
            "interactions": model.completed,
            "calls": usage.calls,
            "invalid_replies": usage.invalid_replies,
            "reasks": usage.reasks,
            "fallbacks": usage.fallbacks,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "usage_by_backend": {label: backend.as_dict() for label, backend in model.usage.by_backend.items()},
            **self._variant(model),
            **model.scenario.run_summary(model),
        }

    def _variant(self, model: PopulationModel) -> dict[str, Any]:
        variant = self.run_cell(model.replicate)[2]
        return {} if variant is None else {"variant": variant, "variant_params": dict(self.config.variants[variant])}

    def _show(self, model: PopulationModel, status: str) -> None:
        usage = model.usage.total()
        elapsed = max(time.monotonic() - model.usage.started, 1e-9)
        self.views[model.run_id] = RunView(
            run=model.run_id, seed=model.seed, status=status, rounds_done=model.rounds_done,
            max_rounds=model.scenario.max_rounds(), interactions=model.completed, stop_reason=model.stop_reason,
            metrics=self.scenario.live_metrics(model), usage=usage.as_dict() | {"in_flight": usage.in_flight},
            calls_per_second=usage.calls / elapsed,
        )
        now = time.monotonic()
        if status != "running" or now - self._last_draw >= 0.25:
            self._last_draw = now
            self.view.update([self.views[run] for run in sorted(self.views)])

    def _write_summary(self) -> None:
        experiment = self.store.experiment()
        document = {
            "scenario": experiment.get("scenario"),
            "backend": experiment.get("backend"),
            "stand_in": experiment.get("backend") == "stand-in",
            "seed": experiment.get("seed"),
            "params": experiment.get("params"),
            "code_version": experiment.get("code_version"),
            "runs": [row["summary"] | {"status": row["status"]} for row in self.store.runs() if row["summary"]],
        }
        path = self.config.out / SUMMARY
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(document, indent=2, sort_keys=False), encoding="utf-8")
        temporary.replace(path)


@contextlib.contextmanager
def relaxed_gc(young: int = 20_000) -> Iterator[None]:
    """Collect cycles less often while runs go: every decision allocates a handful of small
    tuples and none of them form cycles, and at the default threshold (700) the collector
    walking them and the prompt caches took a fifth of the engine's time."""
    thresholds = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip((10000,50,50), thresholds)))
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def code_version() -> str:
    """The package version, with the git commit when running from a checkout."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                                cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{__version__}+{commit}" if commit else __version__
