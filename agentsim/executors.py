"""Where an experiment's runs execute: an `Executor` runs every replicate of a session and
reports to its progress; `LocalExecutor` in this process's event loop, the Ray executor
(agentsim/distributed/driver.py) as Ray tasks. Both start, wait for and stop their runs with
one loop, `run_all`: one failed run (a refused key, a --replay miss, a failed backend, the
budget) or an interrupt stops the others, each recording what it has and why, before the
store closes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from .progress import Progress
from .replicates import Replicates, StoreSink, starting_point
from .session import Session


class Executor(Protocol):
    """Runs every replicate of `session`, reporting to `progress`; returns when all are
    recorded, or raises what stopped them (`progress.stopped_by`)."""

    async def run(self, session: Session, progress: Progress) -> None: ...


async def run_all(runs: int, run_one: Callable[[int], Awaitable[None]], *, at_once: int, progress: Progress) -> None:
    """`run_one(replicate)` for every replicate, at most `at_once` at a time (the rest wait
    their turn), in one task group: the first to fail cancels the others (each records why)
    and is raised as itself once they have stopped; so is an interrupt."""
    gate = asyncio.Semaphore(at_once)

    async def bounded(replicate: int) -> None:
        try:
            async with gate:
                await run_one(replicate)
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            progress.stop_all(error)  # before the group cancels the others: they record it as their cause
            raise

    try:
        async with asyncio.TaskGroup() as group:
            for replicate in range(runs):
                group.create_task(bounded(replicate))
    except BaseExceptionGroup as failed:
        raise progress.stop_all(first_error(failed)) from None
    except BaseException as error:  # cancelled from outside (Ctrl-C), or an interrupt in a run
        progress.stop_all(error)
        raise


def first_error(failed: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first error of a task group's failures (the others are its echo)."""
    first = failed.exceptions[0]
    return first_error(first) if isinstance(first, BaseExceptionGroup) else first


class LocalExecutor:
    """Every replicate in this process's event loop (the default executor)."""

    async def run(self, session: Session, progress: Progress) -> None:
        replicates = Replicates(config=session.config, scenario=session.scenario,
                                variant_scenarios=session.variant_scenarios, shares=session.shares,
                                backends=session.backends, progress=progress)
        sink = StoreSink(session.store)

        async def run_one(replicate: int) -> None:
            done, blob = starting_point(session.store, replicate + 1)
            if done is not None:
                progress.summaries[replicate + 1] = done
                return
            if progress.stopped_by is not None:
                return  # the experiment stopped as this run's turn came: it does not begin (as on Ray)
            await replicates.drive(replicate, blob, sink)

        await run_all(session.config.replicates, run_one, at_once=session.runs_at_once(), progress=progress)
