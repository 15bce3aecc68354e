"""Running agentsim's async machinery from synchronous code: `PopulationModel.step()` (Mesa's
API) and `agentsim.run(...)` (the Python API).

Synchronous callers come in two kinds: a script, where no event loop runs in the calling thread
(the coroutine runs there, on a loop of its own), and a notebook, where Jupyter's loop is already
running in the calling thread and a second one cannot run beside it (the coroutine then runs on a
worker thread, and the caller waits for it). Either way the caller gets the result or the
exception, as if the call had been synchronous all along.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from . import event_loop

T = TypeVar("T")


def loop_running() -> bool:
    """Whether an event loop runs in this thread (a notebook cell, an async caller)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_blocking(coroutine: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop | None = None) -> T:
    """Run `coroutine` to its end on `loop` (None: a fresh loop, closed afterwards, as
    `asyncio.run` does) and return its result; from a thread whose own loop is running (Jupyter),
    on a worker thread. An interrupt of the waiting thread (Jupyter's Interrupt, Ctrl-C) cancels
    the coroutine as Ctrl-C cancels a script's, waits until it has stopped (the runs record the
    interrupt), then is raised."""
    if loop is None:
        if loop_running():
            return _on_worker(lambda main: event_loop.run(main), coroutine)
        return event_loop.run(coroutine)
    if loop_running():
        return _on_worker(loop.run_until_complete, coroutine)
    return loop.run_until_complete(coroutine)


def _on_worker(run: Callable[[Coroutine[Any, Any, T]], T], coroutine: Coroutine[Any, Any, T]) -> T:
    """`run(coroutine)` on a worker thread while this one waits. An interrupt here would
    otherwise leave the worker's loop playing every run to its end (the waiting is all this
    thread does): it is passed on as the cancellation of the coroutine's task."""
    started: Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = Future()
    stop = threading.Event()

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        started.set_result((asyncio.get_running_loop(), task))
        if stop.is_set():  # interrupted before the loop began
            coroutine.close()
            raise asyncio.CancelledError
        return await coroutine

    def cancel() -> None:
        stop.set()
        if started.done():
            worker_loop, task = started.result()
            worker_loop.call_soon_threadsafe(task.cancel)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentsim") as pool:
        future = pool.submit(run, main())
        try:
            return future.result()
        except KeyboardInterrupt:
            cancel()
            while not future.done():  # until the runs have recorded the interrupt (again: still waiting)
                try:
                    wait([future])
                except KeyboardInterrupt:
                    cancel()
            raise
