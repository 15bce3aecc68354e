"""`agentsim.run` inside a Jupyter kernel shows a progress bar per experiment by default (runs,
calls, calls/s, fallbacks, time left), updated in place, and nothing with `progress=False`;
outside a notebook it prints nothing unless asked. The kernel is faked here as IPython's
modules look to agentsim: `IPython.get_ipython()` returns a shell with a kernel, and
`IPython.display.display(..., display_id=True)` returns a handle whose `update` redraws."""

from __future__ import annotations

import asyncio
import io
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import agentsim
from agentsim.figures import LiveFigures
from agentsim.games.naming import NamingGame
from agentsim.notebook import NotebookView, in_notebook
from agentsim.progress import RunView


class FakeKernel:
    """What agentsim sees of a Jupyter kernel: the shell, and every output it was handed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, kernel: bool = True) -> None:
        self.shown: list[Any] = []  # the first display, then each update, in order
        self.displays = 0
        shell = types.SimpleNamespace(kernel=object()) if kernel else types.SimpleNamespace()
        ipython = types.ModuleType("IPython")
        ipython.get_ipython = lambda: shell  # type: ignore[attr-defined]
        display = types.ModuleType("IPython.display")
        display.display = self.display  # type: ignore[attr-defined]
        ipython.display = display  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "IPython", ipython)
        monkeypatch.setitem(sys.modules, "IPython.display", display)

    def display(self, shown: Any, *, display_id: bool = False) -> Any:
        assert display_id is True  # one output, updated in place
        self.displays += 1
        self.shown.append(shown)
        return types.SimpleNamespace(update=self.shown.append)

    def text(self, index: int = -1) -> str:
        console = Console(record=True, width=200, file=io.StringIO())
        console.print(self.shown[index])
        return console.export_text()


def test_a_kernel_is_told_apart_from_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not in_notebook()
    FakeKernel(monkeypatch, kernel=False)  # a terminal IPython: a shell, no kernel
    assert not in_notebook()
    FakeKernel(monkeypatch)
    assert in_notebook()


def test_run_in_a_notebook_shows_a_bar_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    kernel = FakeKernel(monkeypatch)

    async def cell() -> agentsim.Results:  # Jupyter's loop runs: the experiment goes to a worker thread
        return agentsim.run(NamingGame(agents=6, max_rounds=3), runs=2, out=tmp_path / "out")

    results = asyncio.run(cell())
    assert kernel.displays == 1 and len(kernel.shown) >= 2
    final = kernel.text()
    calls = int(results.runs()["calls"].sum())
    assert "naming_game" in final and "100%" in final and "runs 2/2" in final
    assert f"calls {calls:,}" in final and "/s)" in final and "fallbacks 0" in final and "took" in final
    html = kernel.shown[-1]._repr_mimebundle_(include=None, exclude=None)["text/html"]  # what Jupyter draws
    assert "runs 2/2" in html
    assert capfd.readouterr().out == ""  # the bar, and no text besides


def test_progress_false_shows_nothing_in_a_notebook(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    kernel = FakeKernel(monkeypatch)
    agentsim.run(NamingGame(agents=6, max_rounds=2), out=tmp_path / "out", progress=False)
    assert kernel.shown == []


def test_nothing_is_printed_outside_a_notebook(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                               capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    agentsim.run(NamingGame(agents=6, max_rounds=2), out=tmp_path / "out")
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""
    with pytest.raises(agentsim.errors.UserError, match="progress= takes True, False or None"):
        agentsim.run(NamingGame(agents=6, max_rounds=2), out=tmp_path / "other", progress="yes")  # type: ignore[arg-type]


def _view(run: int, status: str, rounds_done: int, calls: int, fallbacks: int) -> RunView:
    return RunView(run=run, seed=run, status=status, rounds_done=rounds_done, max_rounds=10, interactions=0,
                   stop_reason=None, metrics=LiveFigures(), usage={"calls": calls, "fallbacks": fallbacks},
                   calls_per_second=0.0)


def test_the_bar_while_runs_play(monkeypatch: pytest.MonkeyPatch) -> None:
    """Half-way through (one of two runs done, the other at round 0 of 10), 20 s in: the bar
    says 50%, the runs, calls and their rate, fallbacks and a time left; warnings show below."""
    kernel = FakeKernel(monkeypatch)
    now = [100.0]
    view = NotebookView(clock=lambda: now[0])
    view.start({"scenario": "naming_game", "backend": "stand-in", "runs": 2})
    now[0] = 120.0
    view.update([_view(1, "done", 10, 300, 4), _view(2, "running", 0, 100, 1)])
    text = kernel.text()
    assert "50%" in text and "runs 1/2" in text and "calls 400 (20/s)" in text and "fallbacks 5" in text
    assert "ETA 20s" in text
    now[0] = 120.1
    view.update([_view(1, "done", 10, 300, 4), _view(2, "running", 1, 110, 1)])
    assert len(kernel.shown) == 2  # redrawn at most every half second
    view.warn("stand-in: 3 invalid replies")
    assert "warning: stand-in: 3 invalid replies" in kernel.text()
