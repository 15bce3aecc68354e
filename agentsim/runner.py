"""An experiment: K seeded replicates of a scenario, run concurrently in one event loop and
recorded into one output directory, with checkpoints, resume and a clean interrupt.

`Experiment` is the facade the command line, the API and the tests use; the work is done by
three parts it puts together: the `Session` (agentsim/session.py: the checked configuration,
the directory's lock, the store, the backends, summary.json), the `Progress`
(agentsim/progress.py: the runs' pictures, warnings, what stopped the experiment) and an
`Executor` (agentsim/executors.py: in process, or on Ray) that runs the replicates."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from .collection import fewer_collections
from .executors import Executor, LocalExecutor, run_all
from .llm.accounting import Budget
from .llm.base import LanguageModel, Request
from .llm.providers import STAND_IN
from .model_fitness import require_readable
from .progress import NoView, Progress, RunView, View, run_outcome
from .replicates import Replicates, RunSink, StoreSink, starting_point
from .scenario import Scenario
from .session import (
    EXECUTORS,
    LOCAL,
    RAY,
    RULE_AGENTS,
    SUMMARY,
    DirectoryLock,
    ExperimentConfig,
    Session,
    code_version,
    is_stand_in,
)
from .store import Store
from .summaries import merge_by_model, total_by_model

__all__ = ["EXECUTORS", "LOCAL", "RAY", "RULE_AGENTS", "SUMMARY", "DirectoryLock", "Executor", "Experiment",
           "ExperimentConfig", "LocalExecutor", "Replicates", "RunSink", "RunView", "StoreSink", "View",
           "code_version", "is_stand_in", "merge_by_model", "run_all", "run_outcome", "starting_point",
           "total_by_model"]


class Experiment:
    """An experiment to open (every check, the directory locked) and run (every replicate,
    then summary.json); its session and progress are public for the callers that read them."""

    def __init__(self, config: ExperimentConfig, view: View) -> None:
        self.session = Session(config)
        self.progress = Progress(view)

    def open(self) -> None:
        """Check everything the user could get wrong, before any run starts (and, unless the
        output directory is new, before anything in it changes)."""
        self.session.open(self.progress.warn)

    async def run(self) -> list[dict[str, Any]]:
        """Every replicate, on the configured executor; the summaries of the runs, in order."""
        session, progress = self.session, self.progress
        progress.start({"scenario": session.scenario.name, "backend": session.config.backend_label,
                        "seed": session.config.seed, "runs": session.config.replicates, "out": str(session.config.out),
                        "stand_in": session.stand_in(), "backends": session.backend_shares(),
                        "estimate": session.estimate})
        for notice in session.notices:
            progress.warn(notice)
        ignored = session.standin_ignored()
        if ignored:
            progress.warn(f"the stand-in ignores {', '.join(f'{key}={value}' for key, value in ignored.items())}: "
                          "its rule does not read them, so on the stand-in they change nothing; a language model "
                          "would see them")
        try:
            await require_readable([session.scenario, *session.variant_scenarios], session.backends,
                                   session.config.llm, session.config.seed)
            if session.config.llm.batch:  # independent calls, asked at half price before the runs play
                from .batch_run import prefetch_batches  # lazy: the batch APIs and aiohttp, only with --batch

                ((_, stack),) = session.backends.items()
                await prefetch_batches(stack, await self.rehearse(), poll_s=session.config.llm.batch_poll_s,
                                       attempts=session.config.llm.retry.max_attempts, progress=progress.warn)
            with fewer_collections():
                await self.executor().run(session, progress)
        finally:
            progress.close()
            await session.close(progress.stopped_by)
        return [progress.summaries[run] for run in sorted(progress.summaries)]

    async def rehearse(self) -> list[Request]:
        """The requests this experiment makes, found by playing it on the stand-in (same runs,
        seeds, grid and settings) in a scratch directory: what `--batch` asks before the runs."""
        from .batch_run import Recorder  # lazy: the batch APIs and aiohttp, only with --batch

        with tempfile.TemporaryDirectory(prefix="agentsim-batch-") as scratch:
            played = Experiment(self.session.config.on_the_stand_in(Path(scratch) / "standin"), NoView())
            played.open()
            recorder = Recorder(played.backends[STAND_IN])
            played.backends = {STAND_IN: recorder}
            await played.run()
            return recorder.requests

    def executor(self) -> Executor:
        """The executor the configuration names."""
        if self.session.config.executor == RAY:
            from .distributed.driver import RayExecutor  # lazy: Ray is an extra, imported only when asked for

            return RayExecutor()
        return LocalExecutor()

    # What callers read (and tests replace: `backends`), kept where they were.
    @property
    def config(self) -> ExperimentConfig:
        return self.session.config

    @property
    def view(self) -> View:
        return self.progress.view

    @property
    def scenario(self) -> Scenario[Any, Any, Any]:
        return self.session.scenario

    @property
    def store(self) -> Store:
        return self.session.store

    @property
    def lock(self) -> DirectoryLock:
        return self.session.lock

    @property
    def budget(self) -> Budget:
        return self.session.budget

    @property
    def backends(self) -> dict[str, LanguageModel]:
        return self.session.backends

    @backends.setter
    def backends(self, backends: dict[str, LanguageModel]) -> None:
        self.session.backends = backends

    @property
    def summaries(self) -> dict[int, dict[str, Any]]:
        return self.progress.summaries

    @property
    def views(self) -> dict[int, RunView]:
        return self.progress.views

    @property
    def stopped_by(self) -> BaseException | None:
        return self.progress.stopped_by

    @property
    def cluster_workers(self) -> dict[int, list[tuple[str, int]]]:
        """Where each run of a Ray sweep ran: (host, worker pid) per worker it was sent to."""
        return self.progress.workers
