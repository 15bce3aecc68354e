"""One replicate run to its end: the body both executors run (in process, and on a Ray worker).

A run is rebuilt from its seed (or its last checkpoint), stepped until it finishes, and its
rows handed to a `RunSink` together with the checkpoint they lead to: whatever stops it, what
resolved and what was in flight is committed, so it resumes exactly."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import BackendFailedError
from .llm.base import LanguageModel
from .llm.health import fallback_line
from .model import BackendShare, PopulationModel
from .progress import Progress, RunView, run_outcome
from .scenario import Scenario
from .secrets import redact
from .session import ExperimentConfig, run_cell
from .store import MOVES, Recorder, Store, sampled_agents


class RunSink(Protocol):
    """Where a run's records go as it runs: the store (`StoreSink`), or, from a Ray worker, the
    stream to the driver that owns the store (agentsim/distributed/worker.py). Rows and
    checkpoint travel together in `commit`, so what reaches the file is always a state a run
    resumes from."""

    def begin(self, run: int, *, replicate: int, seed: int, backend: str, agents: list[tuple[int, str, str]]) -> None: ...

    def resumed(self, run: int) -> None: ...

    def commit(self, recorder: Recorder, checkpoint: bytes, t: int) -> None: ...

    def stage(self, recorder: Recorder) -> None:
        """Take a run's buffered rows before their checkpoint, where the sink can keep them out
        of memory until `commit` (the store's temporary tables); they count as written only with
        the next `commit`. A sink that cannot leaves them in the recorder."""

    def unstage(self, run: int) -> None:
        """Drop what `stage` took of run `run` since its last `commit`."""

    def finish(self, run: int, status: str, *, stop_reason: str | None, summary: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class StoreSink:
    """A run's records straight into the experiment's store (the in-process executor, and the
    Ray driver replaying what its workers send)."""

    store: Store

    def begin(self, run: int, *, replicate: int, seed: int, backend: str, agents: list[tuple[int, str, str]]) -> None:
        self.store.begin_run(run, replicate=replicate, seed=seed, backend=backend, agents=agents)

    def resumed(self, run: int) -> None:
        self.store.set_status(run, "running")

    def commit(self, recorder: Recorder, checkpoint: bytes, t: int) -> None:
        self.store.commit(recorder, checkpoint, t)

    def stage(self, recorder: Recorder) -> None:
        self.store.stage(recorder)

    def unstage(self, run: int) -> None:
        self.store.staged.drop(run)

    def finish(self, run: int, status: str, *, stop_reason: str | None, summary: dict[str, Any]) -> None:
        self.store.set_status(run, status, stop_reason=stop_reason, summary=summary)


def starting_point(store: Store, run: int) -> tuple[dict[str, Any] | None, bytes | None]:
    """Where run `run` starts: (its summary, None) when it is done already; else (None, its
    last checkpoint), None for a run that begins afresh (a run recorded without a checkpoint
    is discarded first: it had not committed anything to continue from)."""
    recorded = {row["run"]: row for row in store.runs()}.get(run)
    if recorded is not None and recorded["status"] == "done":
        return recorded["summary"], None
    blob = store.checkpoint(run) if recorded is not None else None
    if recorded is not None and blob is None:
        store.discard_run(run)
    return None, blob


COMMITS_SHARE = 0.02  # of a run's wall time, at most, spent writing periodic checkpoints


def commit_interval(checkpoint_seconds: float, last_commit_s: float) -> float:
    """Seconds until the next periodic commit: `--checkpoint-seconds`, stretched so that
    commits take at most COMMITS_SHARE of the run. A checkpoint of a large population (N 1000:
    tens of ms of JSON) written every second would otherwise cost the event loop 5-8% of its
    time, which is calls not sent; 0 still means every round (the user asked for it)."""
    if checkpoint_seconds == 0:
        return 0.0
    return max(checkpoint_seconds, last_commit_s / COMMITS_SHARE)


@dataclass(frozen=True, kw_only=True)
class Replicates:
    """What every replicate of an experiment needs to run: its configuration, scenarios,
    backends, and the progress it reports to."""

    config: ExperimentConfig
    scenario: Scenario[Any, Any, Any]
    variant_scenarios: list[Scenario[Any, Any, Any]]
    shares: list[tuple[str, int | None]]
    backends: dict[str, LanguageModel]
    progress: Progress

    async def drive(self, replicate: int, blob: bytes | None, sink: RunSink) -> None:
        """Run replicate `replicate` to its end, from checkpoint `blob` (None: from the start),
        handing its rows and status to `sink`. Whatever stops it, what resolved and what was
        in flight is committed with a checkpoint, so it resumes exactly."""
        config, progress = self.config, self.progress
        run = replicate + 1
        scenario, seed, _variant = run_cell(self.scenario, self.variant_scenarios, config.seed, replicate)
        recorder = Recorder(run, level=config.record or MOVES, spill=sink.stage)
        model = PopulationModel(scenario, seed=seed, replicate=replicate, run_id=run,
                                backends=[BackendShare(self.backends[spec], count) for spec, count in self.shares],
                                on_resolved=recorder.add)
        recorder.sample = sampled_agents(len(model.population))
        if blob is not None:
            await model.scheduler.resume(model.restore(blob))
            sink.resumed(run)
        else:
            sink.begin(run, replicate=replicate, seed=seed, backend=config.backend_label,
                       agents=[(agent.index, agent.policy.kind, agent.policy.label) for agent in model.population])
        last_commit, interval = time.monotonic(), config.checkpoint_seconds
        try:
            while not model.finished:
                await model.astep()
                self._collect_rounds(model, recorder)
                if time.monotonic() - last_commit >= interval:
                    self._show(model, "running")
                    began = time.monotonic()
                    sink.commit(recorder, model.checkpoint(), model.encounters_begun)
                    last_commit = time.monotonic()
                    interval = commit_interval(config.checkpoint_seconds, last_commit - began)
                else:
                    self._show(model, "running")
                await asyncio.sleep(0)  # lets Ctrl-C in between rounds of in-process policies
            await model.scheduler.drain()
            self._collect_rounds(model, recorder, everything=True)
            verdict = self._fallback_verdict(model)
            if verdict is not None:  # (before the last commit: a resume asks the tail again)
                raise BackendFailedError(verdict, fallbacks=True)
            sink.commit(recorder, model.checkpoint(), model.encounters_begun)
            summary = self._summary(model)
            progress.summaries[run] = summary
            self._show(model, "done")
            sink.finish(run, "done", stop_reason=summary["stop_reason"], summary=summary)
        except BaseException as error:
            # Keep what resolved and what was in flight (it resumes), whatever stopped us.
            stopped_by = progress.stop_all(error)
            cause = error if not isinstance(error, asyncio.CancelledError) else stopped_by
            blob = model.checkpoint()
            try:
                await asyncio.gather(*model.scheduler.cancel(), return_exceptions=True)
            except asyncio.CancelledError:
                pass  # the experiment cancels every run while this one stops: record it all the same
            if isinstance(cause, BackendFailedError) and cause.fallbacks:
                # Stopped for its fallbacks: the encounters since the last checkpoint (those
                # that tripped the breaker) are not recorded; a resume asks them again.
                recorder.clear()
                sink.unstage(run)
            else:
                sink.commit(recorder, blob, model.encounters_begun)
            status, reason = run_outcome(cause)
            try:
                summary = self._summary(model, status=status, stop_reason=reason)
            except Exception:  # a readout that fails on a run stopped part-way: the run is recorded all the same
                summary = self._summary(model, status=status, stop_reason=reason, readout=False)
            if status != "interrupted":
                summary["error"] = redact(str(cause)) or type(cause).__name__
            progress.summaries[run] = summary
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
                for backend in self.backends.values():
                    health = getattr(backend, "health", None)
                    if backend.name == label and health is not None:
                        health.forget_unreadable()
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

    def _summary(self, model: PopulationModel, *, status: str = "done", stop_reason: str | None = None,
                 readout: bool = True) -> dict[str, Any]:
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
            "record": self.config.record,
            **self._variant(model),
            **(model.readout.run_summary(model) if readout else {}),
        }

    def _variant(self, model: PopulationModel) -> dict[str, Any]:
        variant = self._variant_of(model)
        return {} if variant is None else {"variant": variant, "variant_params": dict(self.config.variants[variant])}

    def _variant_of(self, model: PopulationModel) -> int | None:
        return run_cell(self.scenario, self.variant_scenarios, self.config.seed, model.replicate)[2]

    def _show(self, model: PopulationModel, status: str, *, stop_reason: str | None = None) -> None:
        usage = model.usage.total()
        elapsed = max(time.monotonic() - model.usage.started, 1e-9)
        variant = self._variant_of(model)
        cell = "" if variant is None else ", ".join(f"{key}={value}" for key, value in self.config.variants[variant].items())
        self.progress.show(RunView(
            run=model.run_id, seed=model.seed, status=status, rounds_done=model.rounds_done,
            max_rounds=model.scenario.max_rounds(), interactions=model.completed,
            stop_reason=stop_reason or model.stop_reason or (None if status == "running" else "max_rounds"),
            metrics=model.readout.live_figures(model), usage=usage.as_dict() | {"in_flight": usage.in_flight},
            calls_per_second=usage.calls / elapsed, cell=cell,
        ))
