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
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..llm.cache import default_cache_path
from ..runner import RunView
from ..secrets import kept_credentials
from . import require_ray
from .control import SweepControl
from .limits import ClusterBudget, ClusterLimiter
from .portable import PortableError
from .worker import RunPlan, run_replicate

if TYPE_CHECKING:
    from ..runner import Experiment

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


async def run_on_ray(experiment: Experiment) -> None:
    """Every replicate of `experiment` as a Ray task; returns when all are recorded."""
    ray, connected_here = connect(experiment.config.ray_address)
    config = experiment.config
    llm = config.llm
    if llm.cache and llm.cache_path is None:  # every worker on this machine shares the driver's cache file
        llm = dataclasses.replace(llm, cache_path=default_cache_path())
        config = dataclasses.replace(config, llm=llm)
    plan = RunPlan(config=config, scenario=experiment.scenario, variant_scenarios=list(experiment.variant_scenarios),
                   shares=list(experiment.shares))
    plan_bytes = ray.cloudpickle.dumps(plan)
    here = ray.get_runtime_context().get_node_id()
    on_driver_node = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(here, soft=False)
    remote = [spec for spec, backend in experiment.backends.items() if not backend.immediate]
    limiter = ray.remote(ClusterLimiter).options(num_cpus=0, max_concurrency=10_000).remote(
        dict.fromkeys(remote, llm.limits)) if remote else None
    budget = None
    if experiment.budget.limited:
        budget = ray.remote(ClusterBudget).options(num_cpus=0, scheduling_strategy=on_driver_node).remote(
            max_calls=llm.max_calls, max_cost_usd=llm.max_cost_usd, spent=experiment.budget.spent(),
            database=str(experiment.store.path.resolve()))
    control = ray.remote(SweepControl).options(num_cpus=0, max_concurrency=10_000).remote()
    task = ray.remote(run_replicate).options(num_cpus=config.cpus_per_run, max_retries=0)
    sweep = _Sweep(experiment, ray, task, plan_bytes, limiter, budget, control)
    try:
        await sweep.run()
    finally:
        if budget is not None:
            try:
                state = await budget.state.remote()
                experiment.budget.calls, experiment.budget.cost_usd = int(state["calls"]), float(state["cost_usd"])
                experiment.budget.reason = experiment.budget.reason or state["reason"]
            except Exception:
                pass
        if limiter is not None:
            try:
                experiment.cluster_limiter_stats = await limiter.stats.remote()
            except Exception:
                pass
        for actor in (limiter, budget, control):
            if actor is not None:
                ray.kill(actor)
        if connected_here:
            ray.shutdown()


async def _receive(stream: Any) -> tuple[Any, ...] | None:
    """The worker's next message, or None after its last."""
    try:
        reference = await stream.__anext__()
    except StopAsyncIteration:
        return None
    message: tuple[Any, ...] = await reference
    return message


class _Sweep:
    def __init__(self, experiment: Experiment, ray: Any, task: Any, plan_bytes: bytes, limiter: Any, budget: Any,
                 control: Any) -> None:
        self.experiment = experiment
        self.ray = ray
        self.task = task
        self.plan_bytes = plan_bytes
        self.limiter = limiter
        self.budget = budget
        self.control = control
        # Workers load the file by its absolute path (their working directory may differ).
        file = experiment.config.scenario_file
        self.scenario_file = str(Path(file).resolve()) if file else ""
        # URL credentials (user:KEY@host) were taken out of the plan's specs: the workers get
        # them as a task argument, held in memory, never recorded.
        self.credentials = kept_credentials()
        self.lost = _lost_worker_errors(ray)
        self.attempts: dict[int, int] = {}  # run: workers it was sent to
        self.workers_lost = 0
        self.stopping = False

    async def run(self) -> None:
        experiment = self.experiment
        gate = asyncio.Semaphore(experiment.runs_at_once())

        async def bounded(replicate: int) -> None:
            async with gate:
                await self._run_one(replicate)

        tasks = [asyncio.ensure_future(bounded(replicate)) for replicate in range(experiment.config.runs)]
        try:
            await asyncio.gather(*tasks)
        except BaseException as error:
            # One run failed, or Ctrl-C: every worker stops its run, which records why; the
            # runs' tasks write those last records (a while at most), then the sweep ends.
            if experiment.stopped_by is None:
                experiment.stopped_by = error
            self._stop(experiment.stopped_by)
            _, late = await asyncio.wait(tasks, timeout=STOP_GRACE_S + 1)
            for each in late:
                each.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _run_one(self, replicate: int) -> None:
        experiment, store = self.experiment, self.experiment.store
        run = replicate + 1
        while True:
            recorded = {row["run"]: row for row in store.runs()}.get(run)
            if recorded is not None and recorded["status"] == "done":
                experiment.summaries[run] = recorded["summary"]
                return
            blob = store.checkpoint(run) if recorded is not None else None
            if recorded is not None and blob is None:
                store.discard_run(run)
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
        step: asyncio.Future[tuple[Any, ...] | None] | None = None
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
            self._stop(self.experiment.stopped_by or asyncio.CancelledError())
            try:
                async with asyncio.timeout(STOP_GRACE_S):
                    while step is not None and (message := await step) is not None:
                        self._apply_unless_raised(message, run)
                        step = asyncio.ensure_future(_receive(stream))
            except BaseException:
                if step is not None:
                    step.cancel()
                self.ray.cancel(stream, force=True)
            raise

    def _apply_unless_raised(self, message: tuple[Any, ...], run: int) -> None:
        if message[0] != "raised":  # (the sweep's cause is already known)
            self._apply(message, run)

    def _stop(self, cause: BaseException) -> None:
        if not self.stopping:
            self.stopping = True
            self.control.stop.remote(PortableError.of(cause))

    def _apply(self, message: tuple[Any, ...], run: int) -> None:
        experiment, store = self.experiment, self.experiment.store
        kind = message[0]
        if kind == "worker":
            experiment.cluster_workers.setdefault(run, []).append((message[1], message[2]))
        elif kind == "begin":
            fields = message[2]
            store.begin_run(message[1], replicate=fields["replicate"], seed=fields["seed"], backend=fields["backend"],
                            agents=[tuple(agent) for agent in fields["agents"]])
        elif kind == "resumed":
            store.set_status(message[1], "running")
        elif kind == "commit":
            _, recorder, checkpoint, t, view = message
            store.commit(recorder, checkpoint, t)
            self._show(view, run)
        elif kind == "warn":
            experiment._warn(message[1])
        elif kind == "finish":
            _, _, status, reason, summary, view = message
            store.set_status(run, status, stop_reason=reason, summary=summary)
            experiment.summaries[run] = summary
            if view is not None:
                self._show(dataclasses.replace(view, status=status, stop_reason=reason), run, final=True)
        elif kind == "raised":
            error: PortableError = message[1]
            raise error.rebuild()

    def _show(self, view: RunView | None, run: int, *, final: bool = False) -> None:
        if view is None:
            return
        experiment = self.experiment
        workers = experiment.cluster_workers.get(run)
        if workers:
            view = dataclasses.replace(view, worker=f"{workers[-1][0]}:{workers[-1][1]}")
        experiment.views[view.run] = view
        now = time.monotonic()
        if final or now - experiment._last_draw >= 0.25:
            experiment._last_draw = now
            experiment.view.update([experiment.views[run] for run in sorted(experiment.views)])
