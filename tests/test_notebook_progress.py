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


def test_the_bar_after_runs_are_interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs that ended without finishing (Interrupt, a budget, a failure) are not complete: the
    bar stops where they got to, red, and says why; "runs 0/2 done", not "2/2"."""
    kernel = FakeKernel(monkeypatch)
    now = [100.0]
    view = NotebookView(clock=lambda: now[0])
    view.start({"scenario": "naming_game", "backend": "stand-in", "runs": 2})
    now[0] = 130.0
    view.update([_view(1, "interrupted", 3, 100, 0), _view(2, "interrupted", 2, 90, 0)], final=True)
    text = kernel.text()
    assert "25% interrupted" in text and "100%" not in text and "runs 0/2 done" in text and "2 interrupted" in text
    console = Console(record=True, width=200, file=io.StringIO(), color_system="standard", force_terminal=True)
    console.print(kernel.shown[-1])
    assert "\x1b[31m" in console.export_text(styles=True)  # drawn red
    view.update([_view(1, "done", 10, 300, 0), _view(2, "done", 4, 90, 0)], final=True)  # one ended early, by its rule
    assert "100%" in kernel.text() and "runs 2/2 done" in kernel.text() and "interrupted" not in kernel.text()


INTERRUPTED_CELL = """
import asyncio, io, json, os, signal, sqlite3, sys, threading, time, types
from rich.console import Console

shown = []
shell = types.SimpleNamespace(kernel=object())
ipython = types.ModuleType("IPython")
ipython.get_ipython = lambda: shell
display = types.ModuleType("IPython.display")
def show(renderable, *, display_id=False):
    shown.append(renderable)
    return types.SimpleNamespace(update=shown.append)
display.display = show
ipython.display = display
sys.modules["IPython"], sys.modules["IPython.display"] = ipython, display

import agentsim

out = sys.argv[1]

def interrupt_once_rounds_are_recorded():
    while True:
        try:
            connection = sqlite3.connect(f"file:{out}/agentsim.db?mode=ro", uri=True, timeout=0.1)
            rounds = connection.execute("SELECT COUNT(*) FROM rounds").fetchone()[0]
            connection.close()
            if rounds >= 4:
                break
        except sqlite3.Error:
            pass
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

async def kernel():  # Jupyter's loop in the main thread; SIGINT raises KeyboardInterrupt there
    threading.Thread(target=interrupt_once_rounds_are_recorded, daemon=True).start()
    try:
        agentsim.run(sys.argv[2], runs=2, out=out, overrides={"stop_at": "none", "max_rounds": 20000})
    except KeyboardInterrupt as error:
        console = Console(record=True, width=200, file=io.StringIO())
        console.print(shown[-1])
        print(json.dumps({"kind": type(error).__name__, "bar": console.export_text()}))

asyncio.new_event_loop().run_until_complete(kernel())
"""


def test_an_interrupted_notebook_shows_its_runs_as_interrupted(tmp_path: Path) -> None:
    """Jupyter's Interrupt during `agentsim.run`: the notebook's bar ends red at how far the runs
    got, "runs 0/2 done ... 2 interrupted", never green at 100%."""
    import json
    import subprocess

    from helpers import ROOT

    ran = subprocess.run([sys.executable, "-c", INTERRUPTED_CELL, str(tmp_path / "out"), str(ROOT / "scenarios" / "naming_game.py")],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    said = json.loads(ran.stdout.strip().splitlines()[-1])
    assert said["kind"] == "ExperimentInterrupted"
    assert "runs 0/2 done" in said["bar"] and "2 interrupted" in said["bar"] and "100%" not in said["bar"], said["bar"]
    assert "interrupted" in said["bar"].splitlines()[0]  # beside the bar
