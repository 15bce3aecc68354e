"""Helpers the tests share: backends that make encounters interleave, in-process runs, and a
dump of a database's recorded content."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sqlite3
import subprocess
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.model import BackendShare, PopulationModel
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.scenario import Scenario
from agentsim.seeding import unit_uniforms

ROOT = Path(__file__).resolve().parent.parent

# Columns that measure the wall clock, not the run: left out when runs are compared.
TIMING_COLUMNS = {"latency_us", "started", "finished"}


class JitteryStandIn(StandInModel):
    """The stand-in, but each call yields to the event loop a seeded number of times (0-5), so
    concurrent encounters really interleave and finish out of order; `salt` changes the order
    without changing any answer."""

    name = "stand-in"
    immediate = False

    def __init__(self, rules: Any, salt: int = 0) -> None:
        super().__init__(rules)
        self.salt = salt

    async def complete(self, request: Request) -> Completion:
        for _ in range(int(unit_uniforms((request.seed or 0) ^ self.salt, 1)[0] * 6)):
            await asyncio.sleep(0)
        return self.answer(request)


class Quiet:
    def start(self, experiment: dict[str, Any]) -> None: ...
    def update(self, runs: list[Any], *, final: bool = False) -> None: ...
    def stop(self) -> None: ...


def scenario_files() -> list[Path]:
    """Every scenario file: scenarios/*.py and the examples that are scenario files, not
    scripts run as programs (`examples/fig3.py` uses the Python API; its own test runs it)."""
    examples = [path for path in sorted((ROOT / "examples").glob("*.py"))
                if 'if __name__ == "__main__":' not in path.read_text(encoding="utf-8")]
    return sorted((ROOT / "scenarios").glob("*.py")) + examples


def run_model(scenario: Scenario[Any, Any, Any], *, seed: int = 1, backend: Any = None) -> PopulationModel:
    """One run in process, no store; returns the finished model."""
    scenario = scenario.for_experiment(seed)
    backend = backend or StandInModel(scenario.standin_part().rules)
    model = PopulationModel(scenario, seed=seed, backends=[BackendShare(backend)])
    asyncio.run(model.arun())
    return model


def run_experiment(scenario: Scenario[Any, Any, Any], out: Path, *, seed: int = 1, runs: int = 1, backend: Any = None,
                   checkpoint_seconds: float = 1.0) -> list[dict[str, Any]]:
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, seed=seed, runs=runs,
                                             checkpoint_seconds=checkpoint_seconds), Quiet())
    experiment.open()
    if backend is not None:
        experiment.backends = {"stand-in": backend(experiment.scenario)}
    return asyncio.run(experiment.run())


TABLES = ("runs", "agents", "encounters", "decisions", "rounds")


def dump(database: Path, *, tables: tuple[str, ...] = TABLES) -> dict[str, list[tuple[Any, ...]]]:
    """Every recorded row of `tables`, in key order, without the wall-clock columns (and
    without the latency figures inside run summaries)."""
    connection = sqlite3.connect(database)
    content = {}
    for table in tables:
        cursor = connection.execute(f"SELECT * FROM {table}")
        names = [column[0] for column in cursor.description]
        keep = [index for index, name in enumerate(names) if name not in TIMING_COLUMNS]
        rows = []
        for row in cursor:
            values = [row[index] for index in keep]
            if table == "runs":
                summary_at = [names[index] for index in keep].index("summary")
                values[summary_at] = json.dumps(_without_timing(json.loads(values[summary_at] or "{}")), sort_keys=True)
            rows.append(tuple(values))
        content[table] = sorted(rows)
    connection.close()
    return content


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_timing(item) for key, item in value.items() if "latency" not in key}
    return value


def cli(*arguments: str, timeout: float = 60, **options: Any) -> subprocess.CompletedProcess[str]:
    """`python -m agentsim ARGUMENTS` in a subprocess, as a user would run it."""
    return subprocess.run([sys.executable, "-m", "agentsim", *arguments], capture_output=True, text=True,
                          timeout=timeout, **options)


def cli_in_process(*arguments: str) -> subprocess.CompletedProcess[str]:
    """`agentsim.cli.main(ARGUMENTS)` in this process, as `cli` reports it: for commands refused
    before anything runs (a bad flag), where a new interpreter's second of imports per case was
    most of the suite's time. The subprocess path stays tested by `cli` elsewhere."""
    from agentsim.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(list(arguments))
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    return subprocess.CompletedProcess(["agentsim", *arguments], code, stdout.getvalue(), stderr.getvalue())


def run_on_virtual_clock(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run `coroutine` on an event loop whose clock jumps to the next timer instead of sleeping."""

    class VirtualClock(asyncio.SelectorEventLoop):
        now = 0.0

        def time(self) -> float:
            return self.now

        def _run_once(self) -> None:  # type: ignore[override]
            if not self._ready and self._scheduled:  # type: ignore[attr-defined]
                # a nanosecond past the timer: a real clock always moves on (aiolimiter re-arms
                # a timer at the very instant when float rounding leaves it a hair short)
                self.now = max(self.now, self._scheduled[0].when()) + 1e-9  # type: ignore[attr-defined]
            super()._run_once()  # type: ignore[misc]

    loop = VirtualClock()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()
