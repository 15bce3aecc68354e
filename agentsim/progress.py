"""What a running experiment shows as it goes: a picture of each run (`RunView`), the view
that draws them (the live table, log lines, nothing), backends' warnings, and what stopped
the experiment, if anything. Both executors feed it: the in-process one from its models,
the Ray driver from the pictures its workers send."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import RunStopped, UserError
from .figures import LiveFigures
from .secrets import redact

REDRAW_S = 0.25  # the view redraws a running run at most this often (a run's end at once)


@dataclass(frozen=True)
class RunView:
    """An immutable picture of one run for the live view and the log lines."""

    run: int
    seed: int
    status: str
    rounds_done: int
    max_rounds: int
    interactions: int
    stop_reason: str | None
    metrics: LiveFigures
    usage: dict[str, Any]
    calls_per_second: float
    cell: str = ""  # the run's VARIANTS cell ("condition=nl, memory_length=0"), empty outside a grid
    worker: str = ""  # where a Ray sweep runs it ("host:pid"), empty in process


class View(Protocol):
    def start(self, experiment: dict[str, Any]) -> None: ...

    def update(self, runs: list[RunView], *, final: bool = False) -> None: ...

    def stop(self) -> None: ...

    # Optional: `warn(message)`, a backend's warning as it happens (the live view and the log
    # lines show it; a view without it shows none).


class NoView:
    """A view that shows nothing (a Ray worker's runs are shown by the driver)."""

    def start(self, experiment: dict[str, Any]) -> None: ...

    def update(self, runs: list[RunView], *, final: bool = False) -> None: ...

    def stop(self) -> None: ...


def run_outcome(error: BaseException) -> tuple[str, str]:
    """The status and stop reason a run records when `error` stops it."""
    if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)):
        return "interrupted", "interrupted"
    if isinstance(error, RunStopped):
        return error.status, error.reason
    if isinstance(error, UserError):
        return "failed", "user_error"
    return "failed", "error"


class Progress:
    """The runs' pictures and summaries as they come, drawn on `view`; `stopped_by` is what
    stopped every run (the first failure, or the interrupt), which each run records as its
    cause and summary.json as the experiment's."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.views: dict[int, RunView] = {}
        self.summaries: dict[int, dict[str, Any]] = {}
        self.stopped_by: BaseException | None = None
        # Where each run of a Ray sweep ran: (host, worker pid) per worker it was sent to.
        self.workers: dict[int, list[tuple[str, int]]] = {}
        self.last_draw = 0.0
        self.view_failed = False  # the view raised once: said, and not said again

    def start(self, experiment: dict[str, Any]) -> None:
        self.view.start(experiment)

    def stop_all(self, cause: BaseException) -> BaseException:
        """Record `cause` as what stopped the experiment, unless something already did; the cause kept."""
        if self.stopped_by is None:
            self.stopped_by = cause
        return self.stopped_by

    def warn(self, message: str) -> None:
        """A backend's warning, as it happens: to the log and the live view."""
        warn = getattr(self.view, "warn", None)
        if warn is not None and self.stopped_by is None:  # not the echo of requests cancelled on the way out
            warn(redact(message))

    def show(self, view: RunView) -> None:
        """A run's latest picture; the view redraws at once when the run ended, else at most every REDRAW_S."""
        workers = self.workers.get(view.run)
        if workers and not view.worker:
            view = dataclasses.replace(view, worker=f"{workers[-1][0]}:{workers[-1][1]}")
        self.views[view.run] = view
        now = time.monotonic()
        if view.status != "running" or now - self.last_draw >= REDRAW_S:
            self.last_draw = now
            self._draw([self.views[run] for run in sorted(self.views)])

    def placed(self, run: int, host: str, pid: int) -> None:
        """Run `run` went to the Ray worker `pid` on `host`."""
        self.workers.setdefault(run, []).append((host, pid))

    def close(self) -> None:
        """The final picture, and the view stopped."""
        self._draw(list(self.views.values()), final=True)
        self.view.stop()

    def _draw(self, runs: list[RunView], *, final: bool = False) -> None:
        """The view's picture of `runs`; a view that cannot draw them (a game's figures it
        cannot show) is not the runs' failure: they go on, recorded as they end, with one
        warning on stderr."""
        try:
            self.view.update(runs, final=final)
        except Exception as error:
            if not self.view_failed:
                self.view_failed = True
                print(f"agentsim: warning: the view could not show the runs ({type(error).__name__}: "
                      f"{redact(str(error))}); they go on", file=sys.stderr)
