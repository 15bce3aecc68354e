"""The event loop a run plays on: uvloop's where it is installed (Linux and macOS, a dependency
there), asyncio's own otherwise (Windows).

Against a fast local server the client's CPU per call limits a run, and the loop's share of it
(sockets, timers, callbacks) is a third: uvloop's loop, written in Cython over libuv, cuts the
whole per-call cost by a twentieth to a tenth (benchmarks/throughput.py `--only client` runs
agentsim and its bare client on this loop and says which). It changes nothing a run records:
the scheduler's order of play does not depend on when answers arrive (tests/test_event_loop.py
runs the same seed on both loops). Every place that starts a loop for agentsim's machinery goes
through here, so that a run, a notebook's `agentsim.run(...)`, Mesa's `model.step()` and a Ray
worker all use the same one.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    """Which loop `new_event_loop` makes: "uvloop" or "asyncio"."""
    return "asyncio" if _uvloop() is None else "uvloop"


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A fresh loop of the kind runs play on (not set as the thread's current loop)."""
    uvloop = _uvloop()
    return asyncio.new_event_loop() if uvloop is None else uvloop.new_event_loop()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)` on that loop: a fresh one, Ctrl-C cancelling the coroutine,
    pending tasks cancelled and async generators closed at the end, then the loop closed."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(coroutine)


def _uvloop() -> types.ModuleType | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop
