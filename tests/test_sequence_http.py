"""A run is a function of its seed and the model's answers, whatever the latencies: real HTTP
to the stand-in server with real random latency (an unseeded delay per request, so no two
runs see the same order of answers), through the OpenAI SDK, from the command line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from helpers import ROOT, Quiet, cli
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.games.naming import NamingGame
from agentsim.llm.retries import RetryPolicy
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig

CRITICAL_MASS = str(ROOT / "scenarios" / "critical_mass.py")
NAMING = str(ROOT / "scenarios" / "naming_game.py")


def environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env["OPENAI_API_KEY"] = "sk-test"
    return env


def moves(out: Path) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(out / "agentsim.db")
    try:
        return list(connection.execute("SELECT run, t, agent, action, payoff FROM moves ORDER BY run, t, agent"))
    finally:
        connection.close()


def summary(out: Path) -> dict[str, Any]:
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    return run


def test_same_seed_same_moves_whatever_the_latencies_and_a_rerun_asks_nothing(tmp_path: Path,
                                                                               standin_server: Any) -> None:
    server = standin_server(capacity=16, latency_jitter_s=0.008)
    command = (CRITICAL_MASS, "--seed", "5", "--backend", "openai:m", "--base-url", server.url + "/v1", "--no-live",
               "--max-attempts", "4", "--timeout", "10")

    def run(name: str, *options: str) -> Path:
        out = tmp_path / name
        result = cli(*command, "--out", str(out), *options, timeout=180, env=environment())
        assert result.returncode == 0, result.stderr
        return out

    first = run("first", "--no-cache")
    concurrent = server.stats.max_active
    serial = run("serial", "--no-cache", "--set", "max_in_flight=1")
    reference = moves(first)
    assert len(reference) > 200
    assert concurrent > 2, "the first run must have had answers in flight together to mean anything"
    assert moves(serial) == reference, "max_in_flight=1 is the one-at-a-time process: the same moves"
    assert summary(first)["stop_reason"] == summary(serial)["stop_reason"]
    assert summary(first)["calls"] == summary(serial)["calls"]

    cache = tmp_path / "cache.db"
    filled = run("filled", "--cache", str(cache))
    asked = server.stats.requests
    rerun = run("rerun", "--cache", str(cache))
    assert server.stats.requests == asked, "a rerun with the same seed into a new directory sends no request"
    replayed = run("replayed", "--cache", str(cache), "--replay")
    assert server.stats.requests == asked
    assert moves(filled) == moves(rerun) == moves(replayed) == reference


def test_a_slow_backend_slows_the_run_but_does_not_change_who_plays(tmp_path: Path, standin_server: Any,
                                                                    monkeypatch: Any) -> None:
    """Half the population on a server ten times slower: each agent meets exactly as often as
    in the one-at-a-time run (drawing among idle agents gave the fast half most encounters)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fast = standin_server(capacity=16, service_time_s=0.002, latency_jitter_s=0.002)
    slow = standin_server(capacity=16, service_time_s=0.02, latency_jitter_s=0.02)
    population = f"openai:m@{fast.url}/v1=6,openai:m@{slow.url}/v1=6"
    retry = RetryPolicy(max_attempts=4, base_s=0.01, cap_s=0.1)

    def encounters_by_agent(name: str, in_flight: int) -> Counter[int]:
        out = tmp_path / name
        scenario = NamingGame(agents=12, pool_size=4, stop_at="none", max_rounds=8, max_in_flight=in_flight)
        config = ExperimentConfig(scenario=scenario, out=out, seed=4, population=population,
                                  llm=BackendOptions(cache=False, retry=retry, timeout_s=10.0))
        experiment = Experiment(config, Quiet())
        experiment.open()
        asyncio.run(experiment.run())
        return Counter(agent for _, _, agent, _, _ in moves(out))

    sequential = encounters_by_agent("sequential", 1)
    concurrent = encounters_by_agent("concurrent", 6)
    assert sum(sequential.values()) == 2 * 8 * 6
    assert concurrent == sequential
    assert moves(tmp_path / "concurrent") == moves(tmp_path / "sequential")


def test_kill_9_mid_run_with_answers_in_flight_then_resume_gives_the_same_run(tmp_path: Path,
                                                                               standin_server: Any) -> None:
    server = standin_server(capacity=16, service_time_s=0.002, latency_jitter_s=0.006)
    command = [NAMING, "--seed", "2", "--backend", "openai:m", "--base-url", server.url + "/v1", "--no-live",
               "--no-cache", "--set", "agents=24", "--set", "stop_at=none", "--set", "max_rounds=30",
               "--checkpoint-seconds", "0", "--max-attempts", "4", "--timeout", "10"]
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert cli(*command, "--out", str(whole), timeout=180, env=environment()).returncode == 0

    process = subprocess.Popen([sys.executable, "-m", "agentsim", *command, "--out", str(killed)], env=environment(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(_recorded_rounds(killed)) < 10:
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert 0 < len(moves(killed)) < len(moves(whole))

    result = cli(*command, "--out", str(killed), "--resume", timeout=180, env=environment())
    assert result.returncode == 0, result.stderr
    assert moves(killed) == moves(whole)
    assert _recorded_rounds(killed) == _recorded_rounds(whole)


def _recorded_rounds(out: Path) -> list[tuple[Any, ...]]:
    try:
        connection = sqlite3.connect(f"file:{out / 'agentsim.db'}?mode=ro", uri=True, timeout=0.1)
        try:
            return list(connection.execute("SELECT run, round, stats FROM rounds ORDER BY run, round"))
        finally:
            connection.close()
    except sqlite3.Error:
        return []


def test_a_budget_holds_across_kill_9_and_resume(tmp_path: Path, standin_server: Any) -> None:
    """The process killed with -9 cannot say what it spent: the budget it wrote ahead does."""
    server = standin_server(capacity=16, service_time_s=0.002, latency_jitter_s=0.006)
    budget = 400  # the whole run would ask 720
    command = [NAMING, "--seed", "3", "--backend", "openai:m", "--base-url", server.url + "/v1", "--no-live",
               "--no-cache", "--set", "agents=24", "--set", "stop_at=none", "--set", "max_rounds=30",
               "--max-calls", str(budget), "--max-attempts", "4", "--timeout", "10", "--out", str(tmp_path / "out")]
    process = subprocess.Popen([sys.executable, "-m", "agentsim", *command], env=environment(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while server.stats.requests < budget // 2:
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    sent_before = server.stats.requests
    assert sent_before < budget

    result = cli(*command, "--resume", timeout=180, env=environment())
    assert result.returncode == 4, result.stderr  # the budget's stop (README: exit codes)
    assert "--max-calls 400 reached" in result.stderr.strip().splitlines()[-1]
    assert budget * 0.95 <= server.stats.requests <= budget, f"{server.stats.requests} requests against --max-calls {budget}"
