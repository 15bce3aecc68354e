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
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
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
    on a worker thread."""
    if loop is None:
        if loop_running():
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentsim") as pool:
                return pool.submit(event_loop.run, coroutine).result()
        return event_loop.run(coroutine)
    if loop_running():
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentsim") as pool:
            return pool.submit(loop.run_until_complete, coroutine).result()
    return loop.run_until_complete(coroutine)
