"""Progress in a Jupyter notebook: what `agentsim.run` shows by default inside a kernel.

A terminal gets the live table (agentsim/live.py); a notebook cell cannot redraw a terminal, so
there `agentsim.run` shows one bar per experiment in the cell's output, updated in place: runs
done, calls and calls per second, fallbacks, and the time left. It is drawn with rich's
Jupyter support (HTML, and text for consoles that take only text) through IPython's
`display(..., display_id=True)`, which updates one output without ipywidgets. Outside a kernel
(a script, a terminal IPython), nothing here is used and nothing is printed unless asked.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from .progress import RunView

REDRAW_S = 0.5  # a notebook's output is redrawn at most this often (the experiment's end at once)


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (JupyterLab, Notebook, VS Code, Colab): IPython
    is imported and its shell has a kernel; a terminal IPython has none."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


class NotebookView:
    """A view (agentsim/progress.py) that draws the experiment's bar in the notebook's output."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.experiment: dict[str, Any] = {}
        self.runs: list[RunView] = []
        self.warnings: list[str] = []
        self.started = 0.0
        self.last_draw = 0.0
        self.handle: Any = None

    def start(self, experiment: dict[str, Any]) -> None:
        from IPython.display import display

        self.experiment = dict(experiment)
        self.started = self.last_draw = self.clock()
        self.handle = display(self.renderable(), display_id=True)

    def update(self, runs: list[RunView], *, final: bool = False) -> None:
        self.runs = list(runs)
        now = self.clock()
        if final or now - self.last_draw >= REDRAW_S:
            self.last_draw = now
            self._draw(final=final)

    def warn(self, message: str) -> None:
        self.warnings = [*self.warnings[-2:], message]
        self._draw()

    def stop(self) -> None:
        self._draw(final=True)

    def _draw(self, *, final: bool = False) -> None:
        if self.handle is not None:
            self.handle.update(self.renderable(final=final))

    def renderable(self, *, final: bool = False) -> Any:
        """The bar and its figures, as a rich renderable (which Jupyter shows as HTML)."""
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        from .live import clock, eta  # lazy: rich and structlog, only when the bar is drawn

        planned = int(self.experiment.get("runs") or len(self.runs) or 1)
        runs = self.runs
        finished = sum(view.status == "done" for view in runs)
        elapsed = self.clock() - self.started
        calls = sum(int(view.usage.get("calls", 0) or 0) for view in runs)
        fallbacks = sum(int(view.usage.get("fallbacks", 0) or 0) for view in runs)
        left = eta(self.experiment, runs, elapsed)
        done = _fraction_done(runs, planned)
        # Runs that ended without finishing (interrupted, stopped by a budget, failed): the bar
        # shows how far they got, in red, and says why; it is full and green only when every
        # planned run is done.
        unfinished = sorted({view.status for view in runs} - {"running", "done"})
        complete = final and not unfinished and finished >= planned
        verdict = (f"{', '.join(unfinished)}" if unfinished and (final or not any(v.status == "running" for v in runs))
                   else "")
        timing = f"took {clock(elapsed)}" if final else f"ETA {clock(left)}" if left is not None else "ETA …"
        name = f"{self.experiment.get('scenario', 'experiment')} · {self.experiment.get('backend', '')}"
        figures = (f"runs {finished}/{planned} done  ·  calls {calls:,} ({calls / elapsed if elapsed > 0 else 0:.0f}/s)  ·  "
                   f"fallbacks {fallbacks:,}  ·  {timing}")
        if unfinished:
            figures += "  ·  " + ", ".join(f"{sum(view.status == status for view in runs)} {status}"
                                          for status in unfinished)
        shown = 1.0 if complete else done
        bar = Table.grid(padding=(0, 1))
        bar.add_row(Text(name, style="bold"),
                    ProgressBar(total=1.0, completed=shown, width=30, complete_style="red" if verdict else "bar.complete"),
                    Text(f"{shown:.0%}" + (f" {verdict}" if verdict else ""), style="red" if verdict else ""))
        grid = Table.grid()  # two short lines: a notebook's output is narrower than a terminal
        grid.add_row(bar)
        grid.add_row(Text(figures))
        for message in self.warnings:
            grid.add_row(Text(f"warning: {message}", style="red"))
        return grid


def _fraction_done(runs: list[RunView], planned: int) -> float:
    """How far the experiment is, in rounds: a run that is done counts whole (it may end early,
    by its own rule); any other run, running or ended without finishing (interrupted,
    stopped, failed), by the rounds it played."""
    if planned <= 0:
        return 0.0
    total = 0.0
    for view in runs:
        if view.status == "done":
            total += 1.0
        elif view.max_rounds > 0:
            total += min(view.rounds_done, view.max_rounds) / view.max_rounds
    return min(1.0, total / planned)
