"""Stopping a Ray sweep as one: the `SweepControl` actor.

In process, one run that fails (a backend that cannot serve, the budget spent) or a Ctrl-C
stops every run, and each records why, with its open encounters, so `--resume` continues
exactly. Across a cluster the driver says so through this actor: every worker waits on
`stopped` beside its run, and stops its run with that cause the moment it is set, so the
runs record what they would record in process. A run that had not begun by then does not
begin (`is_stopped`), as a run waiting its turn in process never starts.
"""

from __future__ import annotations

import asyncio

from .portable import PortableError


class SweepControl:
    """A Ray actor (made with `ray.remote(SweepControl)`)."""

    def __init__(self) -> None:
        self.cause: PortableError | None = None
        self.event = asyncio.Event()

    def stop(self, cause: PortableError) -> None:
        if self.cause is None:
            self.cause = cause
            self.event.set()

    async def stopped(self) -> PortableError:
        await self.event.wait()
        assert self.cause is not None
        return self.cause

    def is_stopped(self) -> bool:
        return self.cause is not None
