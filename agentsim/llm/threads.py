"""Waiting out a worker thread: a model run in process answers in a thread (`asyncio.to_thread`),
which cannot be stopped. A call cancelled meanwhile (Ctrl-C, SIGTERM, the breaker stopping the
run) must still leave the model alone until that thread returns: freeing llama.cpp's model
under a running thread crashed the process (rc 139 instead of 130 / 143 / 3)."""

from __future__ import annotations

import asyncio
from typing import Any


async def settled(work: asyncio.Future[Any]) -> None:
    """Wait until `work` (a worker thread's result) is done, however often this task is
    cancelled meanwhile: the thread cannot be stopped, and the model must outlive it."""
    while not work.done():
        try:
            await asyncio.wait([work])
        except asyncio.CancelledError:
            continue
    if not work.cancelled():
        work.exception()  # retrieved: the caller is cancelled and reports that instead
