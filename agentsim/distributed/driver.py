"""The driver of a Ray sweep: sends each run to a Ray worker, writes what comes back.

The driver keeps everything the in-process executor keeps: the one store (it alone writes
it), `summary.json`, the live view (fed from each commit's picture of its run), and the
rule that one failed run stops the others, each recording why. A worker that dies is not a
failed run: the run goes to another worker from the last checkpoint the driver committed,
so nothing is lost or written twice (`MAX_ATTEMPTS` times, then the experiment stops).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..executors import run_all
from ..llm.cache import default_cache_path
from ..progress import Progress
from ..replicates import StoreSink, starting_point
from ..secrets import kept_credentials
from ..session import Session
from . import require_ray
from .control import SweepControl
from .limits import ClusterBudget, ClusterLimiter
from .portable import PortableError
from .records import Finished, Message, Placed, Raised, Warned
from .worker import RunPlan, run_replicate

MAX_ATTEMPTS = 4  # a run is sent to a worker at most this often (workers that died, plus one)
STOP_GRACE_S = 10.0  # how long a stopping sweep waits for its workers' last records


class WorkerLost(Exception):
    """A worker stopped answering (killed, out of memory, its node gone)."""


def connect(address: str) -> tuple[Any, bool]:
    """Ray, connected: to the cluster at `address`, to the one this process already joined,
    or to a Ray started here (its CPU count from AGENTSIM_RAY_CPUS, else every core); and
    whether this call connected (and so disconnects at the end)."""
    ray = require_ray()
    if ray.is_initialized():
        return ray, False
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address:
        options["address"] = address
    elif os.environ.get("AGENTSIM_RAY_CPUS"):
        options["num_cpus"] = int(os.environ["AGENTSIM_RAY_CPUS"])
    try:
        ray.init(**options)
    except ConnectionError as error:
        raise UserError(f"cannot reach the Ray cluster at --ray-address {address} ({error}); start it "
                        f"(ray start --head) or drop --ray-address for a Ray started here") from None
    return ray, True


def _lost_worker_errors(ray: Any) -> tuple[type[BaseException], ...]:
    exceptions = ray.exceptions
    return tuple(getattr(exceptions, name) for name in (
        "WorkerCrashedError", "NodeDiedError", "ObjectLostError", "LocalRayletDiedError", "ActorDiedError",
        "RaySystemError", "OutOfMemoryError", "ActorUnavailableError") if hasattr(exceptions, name))


def run_plan(session: Session) -> RunPlan:
    """What every worker is sent: the configuration the session opened (the one the builder,
    agentsim/configure.py, made for the command line and the Python API alike), its scenarios
    and backends; the response cache named, so that every worker on the driver's machine shares
    its file."""
    config = session.config
    if config.llm.cache and config.llm.cache_path is None:
        config = dataclasses.replace(config, llm=dataclasses.replace(config.llm, cache_path=default_cache_path()))
    return RunPlan(config=config, scenario=session.scenario, variant_scenarios=list(session.variant_scenarios),
                   shares=list(session.shares))


class RayExecutor:
    """Every replicate of the session as a Ray task; returns when all are recorded."""

    async def run(self, session: Session, progress: Progress) -> None:
        ray, connected_here = connect(session.config.ray_address)
        plan = run_plan(session)
        config, llm = plan.config, plan.config.llm
        plan_bytes = ray.cloudpickle.dumps(plan)
        here = ray.get_runtime_context().get_node_id()
        on_driver_node = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(here, soft=False)
        remote = [spec for spec, backend in session.backends.items() if not backend.immediate]
        limiter = ray.remote(ClusterLimiter).options(num_cpus=0, max_concurrency=10_000).remote(
            dict.fromkeys(remote, llm.limits)) if remote else None
        budget = None
        if session.budget.limited:
            budget = ray.remote(ClusterBudget).options(num_cpus=0, scheduling_strategy=on_driver_node).remote(
                max_calls=llm.max_calls, max_cost_usd=llm.max_cost_usd, spent=session.budget.spent(),
                database=str(session.store.path.resolve()))
        control = ray.remote(SweepControl).options(num_cpus=0, max_concurrency=10_000).remote()
        task = ray.remote(run_replicate).options(num_cpus=config.cpus_per_run, max_retries=0)
        sweep = _Sweep(session, progress, ray, task, plan_bytes, limiter, budget, control)
        try:
            await sweep.run()
        finally:
            if budget is not None:
                try:
                    state = await budget.state.remote()
                    session.budget.calls, session.budget.cost_usd = int(state["calls"]), float(state["cost_usd"])
                    session.budget.reason = session.budget.reason or state["reason"]
                except Exception:
                    pass
            if limiter is not None:
                try:
                    session.cluster_limiter_stats = await limiter.stats.remote()
                except Exception:
                    pass
            for actor in (limiter, budget, control):
                if actor is not None:
                    ray.kill(actor)
            if connected_here:
                ray.shutdown()


async def _receive(stream: Any) -> Message | None:
    """The worker's next message, or None after its last."""
    try:
        reference = await stream.__anext__()
    except StopAsyncIteration:
        return None
    message: Message = await reference
    return message


class _Sweep:
    def __init__(self, session: Session, progress: Progress, ray: Any, task: Any, plan_bytes: bytes, limiter: Any,
                 budget: Any, control: Any) -> None:
        self.session = session
        self.progress = progress
        self.sink = StoreSink(session.store)  # the driver alone writes the store, as in process
        self.ray = ray
        self.task = task
        self.plan_bytes = plan_bytes
        self.limiter = limiter
        self.budget = budget
        self.control = control
        # Workers load the file by its absolute path (their working directory may differ).
        file = session.config.scenario_file
        self.scenario_file = str(Path(file).resolve()) if file else ""
        # URL credentials (user:KEY@host) were taken out of the plan's specs: the workers get
        # them as a task argument, held in memory, never recorded.
        self.credentials = kept_credentials()
        self.lost = _lost_worker_errors(ray)
        self.attempts: dict[int, int] = {}  # run: workers it was sent to
        self.workers_lost = 0
        self.stopping = False

    async def run(self) -> None:
        """Every run, with the in-process executor's loop: one run that fails, or Ctrl-C,
        stops the others; each worker stops its run, which records why (see `_follow`)."""
        await run_all(self.session.config.replicates, self._run_one, at_once=self.session.runs_at_once(),
                      progress=self.progress)

    async def _run_one(self, replicate: int) -> None:
        run = replicate + 1
        while True:
            done, blob = starting_point(self.session.store, run)
            if done is not None:
                self.progress.summaries[run] = done
                return
            if self.stopping:
                return  # the sweep stopped before this run's turn: it does not begin
            attempt = self.attempts[run] = self.attempts.get(run, 0) + 1
            owner = f"run{run}.{attempt}"
            stream = self.task.remote(self.scenario_file, self.plan_bytes, replicate, blob, owner,
                                      self.limiter, self.budget, self.control, self.credentials)
            try:
                await self._follow(stream, run)
                return
            except WorkerLost:
                self.workers_lost += 1
                if self.limiter is not None:
                    await self.limiter.forget.remote(owner)
                if attempt >= MAX_ATTEMPTS:
                    raise RuntimeError(f"run {run} lost its Ray worker {attempt} times; the cluster is failing "
                                       f"(see `ray status`), continue with --resume once it is healthy") from None
                continue

    async def _follow(self, stream: Any, run: int) -> None:
        """Write what the worker sends until its run ends; raise what stopped it. Each message
        is received by a task of its own, shielded: a sweep that stops while a message is on
        its way still writes it (cancelling Ray's awaitable would lose it)."""
        step: asyncio.Future[Message | None] | None = None
        try:
            while True:
                step = asyncio.ensure_future(_receive(stream))
                message = await asyncio.shield(step)
                if message is None:
                    return
                self._apply(message, run)
        except self.lost as error:
            raise WorkerLost(str(error)) from None
        except asyncio.CancelledError:
            # The sweep stops (Ctrl-C, or another run failed): the worker stops its run, which
            # records what it has and why; wait a little for those last records.
            self._stop(self.progress.stopped_by or asyncio.CancelledError())
            try:
                async with asyncio.timeout(STOP_GRACE_S):
                    while step is not None and (message := await step) is not None:
                        if not isinstance(message, Raised):  # (the sweep's cause is already known)
                            self._apply(message, run)
                        step = asyncio.ensure_future(_receive(stream))
            except BaseException:
                if step is not None:
                    step.cancel()
                self.ray.cancel(stream, force=True)
            raise

    def _stop(self, cause: BaseException) -> None:
        if not self.stopping:
            self.stopping = True
            self.control.stop.remote(PortableError.of(cause))

    def _apply(self, message: Message, run: int) -> None:
        """One record from run `run`'s worker: a sink call replayed onto the store (and the
        run's picture shown), or what the worker says about itself."""
        progress = self.progress
        if isinstance(message, Placed):
            progress.placed(run, message.host, message.pid)
        elif isinstance(message, Warned):
            progress.warn(message.text)
        elif isinstance(message, Raised):
            raise message.error.rebuild()
        else:
            view = message.replay(self.sink)
            if isinstance(message, Finished):
                progress.summaries[run] = message.summary
            if view is not None:
                progress.show(view)
