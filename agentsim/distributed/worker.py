"""A Ray worker's side of a sweep: one run, from its seed or its last checkpoint, its records
streamed to the driver as they are committed.

`run_replicate` is the body of a Ray streaming-generator task. It yields, in order, the typed
records of agentsim/distributed/records.py:

    Placed(host, pid)                                where the run goes on (for the record of the sweep)
    Begun(run, ...) or Resumed(run)                  a new run (its row and agents), or one continued
    Committed(recorder, checkpoint, t, view)         rows together with the checkpoint they lead to
    Warned(text)                                     a backend's warning
    Finished(run, status, stop_reason, summary, view)
    Raised(error)                                    what stopped the run, if anything (a PortableError)

Begun, Resumed, Committed and Finished are the run's `RunSink` calls, which the driver replays
onto the experiment's `StoreSink`. The driver writes each commit in one transaction, so the
store holds a resumable state whatever moment a worker dies at; a run sent to another worker
continues from it. The scenario file is loaded before the run's configuration is unpickled,
so classes the file defines mean the same on the worker as on the driver (on a cluster the
file must be at the same path on every node: a shared directory, or Ray's runtime_env
working_dir).
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

from .. import event_loop
from ..executors import first_error
from ..llm.accounting import Budget
from ..llm.base import LanguageModel
from ..llm.limiter import Limits
from ..llm.specs import build_backend
from ..progress import NoView, Progress
from ..replicates import Replicates
from ..scenario import Scenario
from ..scenario_files import load_scenario
from ..secrets import keep_credentials
from ..session import ExperimentConfig
from ..store import Recorder
from .limits import ClusterBudgetClient, ClusterLimitedModel
from .portable import PortableError
from .records import Begun, Committed, Finished, Message, Placed, Raised, Resumed, Warned


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """What every worker needs to run any replicate of the experiment (pickled once)."""

    config: ExperimentConfig
    scenario: Scenario[Any, Any, Any]
    variant_scenarios: list[Scenario[Any, Any, Any]]
    shares: list[tuple[str, int | None]]


class StreamSink:
    """The run's sink calls, queued as records for the generator to yield to the driver."""

    def __init__(self, queue: asyncio.Queue[Message | None], progress: Progress) -> None:
        self.queue = queue
        self.progress = progress

    def begin(self, run: int, *, replicate: int, seed: int, backend: str, agents: list[tuple[int, str, str]]) -> None:
        self.queue.put_nowait(Begun(run, replicate, seed, backend, agents))

    def resumed(self, run: int) -> None:
        self.queue.put_nowait(Resumed(run))

    def commit(self, recorder: Recorder, checkpoint: bytes, t: int) -> None:
        rows = dataclasses.replace(recorder, encounters=list(recorder.encounters), decisions=list(recorder.decisions),
                                   answered=list(recorder.answered), bare=list(recorder.bare),
                                   rounds=list(recorder.rounds), spill=None)
        recorder.clear()
        self.queue.put_nowait(Committed(rows, checkpoint, t, self.progress.views.get(recorder.run)))

    def stage(self, recorder: Recorder) -> None:
        """The rows stay in the recorder: they travel to the driver with their checkpoint."""

    def unstage(self, run: int) -> None:
        """Nothing was taken."""

    def finish(self, run: int, status: str, *, stop_reason: str | None, summary: dict[str, Any]) -> None:
        self.queue.put_nowait(Finished(run, status, stop_reason, summary, self.progress.views.get(run)))


def _replicates(plan: RunPlan, limiter: Any, budget: Any, owner: str, queue: asyncio.Queue[Message | None]) -> Replicates:
    """The plan's replicates, run here on backends that share the cluster's limits and budget."""
    config = plan.config
    spent = (ClusterBudgetClient(budget, max_calls=config.llm.max_calls, max_cost_usd=config.llm.max_cost_usd)
             if budget is not None else Budget())

    def warn(message: str) -> None:
        queue.put_nowait(Warned(message))

    def backend(spec: str) -> LanguageModel:
        def limited(inner: LanguageModel, limits: Limits) -> LanguageModel:
            return ClusterLimitedModel(inner, limits, limiter=limiter, label=spec, owner=owner)

        return build_backend(spec, config.llm, spent, warn, limiter=limited if limiter is not None else None,
                             rules=plan.scenario.standin_part().rules)

    return Replicates(config=config, scenario=plan.scenario, variant_scenarios=list(plan.variant_scenarios),
                      shares=list(plan.shares), backends={spec: backend(spec) for spec, _ in plan.shares},
                      progress=Progress(NoView()))


async def _until_stopped(run: Coroutine[Any, Any, None], progress: Progress, control: Any) -> None:
    """Run `run`; if the sweep stops meanwhile, stop it with the sweep's cause (it records
    that cause, as a run stopped in process does)."""
    if control is None:
        return await run

    async def watch(task: asyncio.Task[None]) -> None:
        cause: PortableError = await control.stopped.remote()
        progress.stop_all(cause.rebuild())
        task.cancel()

    try:
        async with asyncio.TaskGroup() as group:
            task = group.create_task(run)
            watcher = group.create_task(watch(task))
            task.add_done_callback(lambda _: watcher.cancel())
    except BaseExceptionGroup as failed:
        raise first_error(failed) from None
    if task.cancelled():  # stopped by the sweep: recorded with its cause, said as the interrupt it is here
        raise asyncio.CancelledError


def run_replicate(scenario_file: str, plan_bytes: bytes, replicate: int, checkpoint: bytes | None,
                  owner: str, limiter: Any = None, budget: Any = None, control: Any = None,
                  credentials: dict[str, tuple[str, str]] | None = None) -> Iterator[Message]:
    """Run one replicate on this worker, yielding its records (see the module's docstring).
    `credentials` are the URL credentials the driver took out of the specs, by host."""
    keep_credentials(credentials or {})
    loop = event_loop.new_event_loop()
    asyncio.set_event_loop(loop)
    queue: asyncio.Queue[Message | None] = asyncio.Queue()

    async def main() -> None:
        replicates: Replicates | None = None
        queue.put_nowait(Placed(socket.gethostname(), os.getpid()))
        try:
            if scenario_file:
                load_scenario(scenario_file)  # registers the file's classes before the plan names them
            # The driver pickled the plan in this session and Ray holds it in memory: it is no
            # stored byte (a checkpoint this run resumes from is plain data, agentsim/checkpoints.py).
            plan: RunPlan = pickle.loads(plan_bytes)
            if control is not None and await control.is_stopped.remote():
                return  # the sweep stopped before this run's turn: it does not begin
            replicates = _replicates(plan, limiter, budget, owner, queue)
            sink = StreamSink(queue, replicates.progress)
            await _until_stopped(replicates.drive(replicate, checkpoint, sink), replicates.progress, control)
        except BaseException as error:
            queue.put_nowait(Raised(PortableError.of(error)))
        finally:
            if replicates is not None:
                for backend in replicates.backends.values():
                    try:
                        await backend.aclose()
                    except Exception:
                        pass
            queue.put_nowait(None)

    task = loop.create_task(main())
    getter: asyncio.Task[Message | None] | None = None
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
