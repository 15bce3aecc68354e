"""A Ray worker's side of a sweep: one run, from its seed or its last checkpoint, its records
streamed to the driver as they are committed.

`run_replicate` is the body of a Ray streaming-generator task. It yields messages, in order:

    ("worker", host, pid)                      where the run goes on (for the record of the sweep)
    ("begin", run, fields)                     a new run: its row and its agents
    ("resumed", run)                           a run continued from a checkpoint
    ("commit", recorder, checkpoint, t, view)  rows together with the checkpoint they lead to
    ("warn", text)                             a backend's warning
    ("finish", run, status, reason, summary, view)
    ("raised", error)                          what stopped the run, if anything (a PortableError)

The driver writes each commit in one transaction, so the store holds a resumable state
whatever moment a worker dies at; a run sent to another worker continues from it. The
scenario file is loaded before the run's configuration is unpickled, so classes the file
defines mean the same on the worker as on the driver (on a cluster the file must be at the
same path on every node: a shared directory, or Ray's runtime_env working_dir).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pickle
import socket
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from ..llm.accounting import Budget
from ..llm.base import LanguageModel
from ..llm.limiter import Limits
from ..llm.specs import build_backend
from ..runner import Experiment, ExperimentConfig, RunView
from ..scenario import Scenario
from ..secrets import keep_credentials
from ..store import Recorder
from .limits import ClusterBudgetClient, ClusterLimitedModel
from .portable import PortableError


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """What every worker needs to run any replicate of the experiment (pickled once)."""

    config: ExperimentConfig
    scenario: Scenario[Any, Any, Any]
    variant_scenarios: list[Scenario[Any, Any, Any]]
    shares: list[tuple[str, int | None]]


class _QueueSink:
    """The run's records, queued for the generator to yield to the driver."""

    def __init__(self, queue: asyncio.Queue[tuple[Any, ...] | None], experiment: Experiment) -> None:
        self.queue = queue
        self.experiment = experiment

    def begin(self, run: int, *, replicate: int, seed: int, backend: str, agents: list[tuple[int, str, str]]) -> None:
        self.queue.put_nowait(("begin", run, {"replicate": replicate, "seed": seed, "backend": backend, "agents": agents}))

    def resumed(self, run: int) -> None:
        self.queue.put_nowait(("resumed", run))

    def commit(self, recorder: Recorder, checkpoint: bytes, t: int) -> None:
        rows = dataclasses.replace(recorder, encounters=list(recorder.encounters), decisions=list(recorder.decisions),
                                   answered=list(recorder.answered), bare=list(recorder.bare),
                                   rounds=list(recorder.rounds))
        recorder.clear()
        self.queue.put_nowait(("commit", rows, checkpoint, t, self.experiment.views.get(recorder.run)))

    def finish(self, run: int, status: str, *, stop_reason: str | None, summary: dict[str, Any]) -> None:
        self.queue.put_nowait(("finish", run, status, stop_reason, summary, self.experiment.views.get(run)))


class _NoView:
    def start(self, experiment: dict[str, Any]) -> None: ...
    def update(self, runs: list[RunView], *, final: bool = False) -> None: ...
    def stop(self) -> None: ...


def _experiment(plan: RunPlan, limiter: Any, budget: Any, owner: str,
                warnings: asyncio.Queue[tuple[Any, ...] | None]) -> Experiment:
    """An Experiment that runs replicates here and records nothing itself."""
    config = plan.config
    experiment = Experiment(config, _NoView())
    experiment.scenario = plan.scenario
    experiment.variant_scenarios = list(plan.variant_scenarios)
    experiment.shares = list(plan.shares)
    experiment.budget = (ClusterBudgetClient(budget, max_calls=config.llm.max_calls, max_cost_usd=config.llm.max_cost_usd)
                         if budget is not None else Budget())

    def warn(message: str) -> None:
        warnings.put_nowait(("warn", message))

    def backend(spec: str) -> LanguageModel:
        def limited(inner: LanguageModel, limits: Limits) -> LanguageModel:
            return ClusterLimitedModel(inner, limits, limiter=limiter, label=spec, owner=owner)

        return build_backend(spec, plan.scenario, config.llm, experiment.budget, warn,
                             limiter=limited if limiter is not None else None)

    experiment.backends = {spec: backend(spec) for spec, _ in plan.shares}
    return experiment


async def _until_stopped(run: Coroutine[Any, Any, None], experiment: Experiment, control: Any) -> None:
    """Run `run`; if the sweep stops meanwhile, stop it with the sweep's cause (it records
    that cause, as a run stopped in process does)."""
    task = asyncio.ensure_future(run)
    if control is None:
        return await task

    async def watch() -> None:
        cause: PortableError = await control.stopped.remote()
        experiment.stopped_by = cause.rebuild()
        task.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        await task
    finally:
        watcher.cancel()


def run_replicate(scenario_file: str, plan_bytes: bytes, replicate: int, checkpoint: bytes | None,
                  owner: str, limiter: Any = None, budget: Any = None, control: Any = None,
                  credentials: dict[str, tuple[str, str]] | None = None) -> Iterator[tuple[Any, ...]]:
    """Run one replicate on this worker, yielding its records (see the module's docstring).
    `credentials` are the URL credentials the driver took out of the specs, by host."""
    keep_credentials(credentials or {})
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    queue: asyncio.Queue[tuple[Any, ...] | None] = asyncio.Queue()

    async def main() -> None:
        experiment: Experiment | None = None
        queue.put_nowait(("worker", socket.gethostname(), os.getpid()))
        try:
            if scenario_file:
                from ..scenario_files import load_scenario

                load_scenario(scenario_file)  # registers the file's classes before the plan names them
            # The driver pickled the plan in this session and Ray holds it in memory: it is no
            # stored byte (a checkpoint this run resumes from is plain data, agentsim/checkpoints.py).
            plan: RunPlan = pickle.loads(plan_bytes)
            if control is not None and await control.is_stopped.remote():
                return  # the sweep stopped before this run's turn: it does not begin
            experiment = _experiment(plan, limiter, budget, owner, queue)
            await _until_stopped(experiment.drive(replicate, checkpoint, _QueueSink(queue, experiment)), experiment, control)
        except BaseException as error:
            queue.put_nowait(("raised", PortableError.of(error)))
        finally:
            if experiment is not None:
                for backend in experiment.backends.values():
                    try:
                        await backend.aclose()
                    except Exception:
                        pass
            queue.put_nowait(None)

    task = loop.create_task(main())
    getter: asyncio.Task[tuple[Any, ...] | None] | None = None
    try:
        while True:
            if getter is None or (getter.done() and getter.exception() is not None):
                getter = loop.create_task(queue.get())
            try:
                message = loop.run_until_complete(getter)
            except KeyboardInterrupt:  # ray.cancel: stop the run, which records what it has and says so
                task.cancel()
                continue
            getter = None
            if message is None:
                break
            yield message
        loop.run_until_complete(task)
    finally:
        loop.close()
        asyncio.set_event_loop(None)
