"""Runs play on uvloop's loop where it is installed (agentsim/event_loop.py), and which loop
plays a run changes nothing it records."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from helpers import Quiet
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim import event_loop
from agentsim.blocking import run_blocking
from agentsim.games.naming import NamingGame
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig


async def running_loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build; asyncio's loop is used there")
def test_runs_play_on_uvloop_where_it_is_installed() -> None:
    assert event_loop.loop_name() == "uvloop"
    assert event_loop.run(running_loop_module()).startswith("uvloop")
    assert run_blocking(running_loop_module()).startswith("uvloop"), "agentsim.run(...) and model.step() too"


def test_without_uvloop_the_run_falls_back_to_asyncios_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    assert event_loop.loop_name() == "asyncio"
    assert event_loop.run(running_loop_module()).startswith("asyncio")


def test_the_loop_changes_nothing_a_run_records(tmp_path: Path, standin_server: Any) -> None:
    """The same seed over real HTTP with random latency, once on asyncio's loop and once on
    uvloop's: move for move the same run."""
    server = standin_server(capacity=8, service_time_s=0.002, latency_jitter_s=0.004)
    runner: dict[str, Callable[[Coroutine[Any, Any, None]], None]] = {"asyncio": asyncio.run, "uvloop": event_loop.run}

    def moves(name: str) -> list[tuple[Any, ...]]:
        out = tmp_path / name
        scenario = NamingGame(agents=10, pool_size=4, stop_at="none", max_rounds=6)
        config = ExperimentConfig(scenario=scenario, out=out, seed=3, backend=f"openai:m@{server.url}/v1",
                                  llm=BackendOptions(cache=False, timeout_s=10.0))
        experiment = Experiment(config, Quiet())
        experiment.open()
        runner[name](experiment.run())
        connection = sqlite3.connect(out / "agentsim.db")
        try:
            return list(connection.execute("SELECT run, t, agent, action, payoff FROM moves ORDER BY run, t, agent"))
        finally:
            connection.close()

    on_asyncio = moves("asyncio")
    assert len(on_asyncio) == 10 * 6
    assert server.stats.max_active > 1, "answers were in flight together, so their order could differ"
    assert moves("uvloop") == on_asyncio
