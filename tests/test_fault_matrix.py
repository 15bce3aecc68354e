"""The fault matrix: every fault the stand-in server injects, made permanent once the start-up
probe has passed, through the openai, anthropic and tgi backends (their real clients over
real HTTP), in a short run (8 agents, 3 population rounds) and a long one (8 agents, 1000
rounds). Whatever the length, a run that cannot get the model's answers stops as `failed`
(exit 3, one line), without recording a fallback that stands for the backend's failure, and
with nothing lost or recorded twice; a run whose replies are mostly unreadable fails too, at
its end if the breaker's window never filled. `benchmarks/fault_matrix.py` is the bigger
version, with figures."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, Quiet, cli
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.errors import RunStopped
from agentsim.games.naming import NamingGame
from agentsim.llm.retries import RetryPolicy
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig

NAMING = str(ROOT / "scenarios" / "naming_game.py")
PROVIDERS = ("openai", "anthropic", "tgi")
# Each fault on every request once the probe's request has been answered.
FAULTS: dict[str, dict[str, float]] = {
    kind: {kind: 1.0} for kind in ("429", "429_retry_after", "529", "overloaded", "500", "503", "timeout", "drip",
                                   "drop", "malformed", "unparseable")
} | {"mostly_unparseable": {"unparseable": 0.9}}
LENGTHS = {"short": 3, "long": 1000}  # population rounds of 8 agents
QUICK = BackendOptions(retry=RetryPolicy(max_attempts=4, base_s=0.005, cap_s=0.05, deadline_s=3), timeout_s=0.3,
                       cache=False)
SERVER = {"capacity": 8, "healthy_first": 1, "retry_after_s": 3600, "timeout_hold_s": 1.0, "drip_interval_s": 0.05,
          "seed": 7}


def spec(provider: str, url: str) -> str:
    return {"openai": f"openai:stand-in-model@{url}/v1", "anthropic": f"anthropic:stand-in-model@{url}",
            "tgi": f"tgi:{url}"}[provider]


def run(out: Path, backend: str, rounds: int, *, resume: bool = False) -> int:
    """One in-process run; the exit code the command line gives for how it ended."""
    scenario = NamingGame(agents=8, max_rounds=rounds, stop_at="none", max_in_flight=4)
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=backend, seed=3, llm=QUICK,
                                             resume=resume), Quiet())
    experiment.open()
    try:
        asyncio.run(experiment.run())
    except RunStopped as error:
        return error.exit_code
    return 0


def recorded(out: Path) -> dict[str, Any]:
    connection = sqlite3.connect(out / "agentsim.db")
    try:
        times = [t for (t,) in connection.execute("SELECT t FROM encounters ORDER BY t")]
        moves = list(connection.execute("SELECT reply, fallback IS 1 FROM decisions WHERE payoff IS NOT NULL"))
    finally:
        connection.close()
    return {"times": times, "decisions": len(moves), "fallbacks": sum(fallback for _, fallback in moves),
            "without_reply": sum(not reply for reply, _ in moves)}


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_run_that_cannot_get_answers_fails_at_any_length(tmp_path: Path, standin_server: Any, provider: str,
                                                            fault: str, length: str) -> None:
    server = standin_server(faults=FAULTS[fault], **SERVER)
    out = tmp_path / "out"
    assert run(out, spec(provider, server.url), LENGTHS[length]) == 3
    summary = json.loads((out / "summary.json").read_text())
    (run_summary,) = summary["runs"]
    assert (run_summary["status"], run_summary["stop_reason"]) == ("failed", "backend_failed")
    rows = recorded(out)
    assert rows["times"] == list(range(len(rows["times"]))), "an interaction was lost or recorded twice"
    assert rows["decisions"] == 2 * len(rows["times"])
    assert rows["without_reply"] == 0, "a fallback that stands for the backend's failure was recorded"
    if "unparseable" not in fault:
        assert rows["fallbacks"] == 0
    elif length == "long":
        assert rows["decisions"] < 100, "the breaker waited for its whole window"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_short_run_of_unreadable_replies_exits_3_with_one_line(tmp_path: Path, standin_server: Any,
                                                                 provider: str) -> None:
    """8 agents x 3 rounds: 24 decisions, all fallbacks, under the breaker's window of 100."""
    server = standin_server(faults={"unparseable": 1.0}, **SERVER)
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", spec(provider, server.url), "--out", str(out), "--set", "agents=8",
                 "--set", "max_rounds=3", "--set", "stop_at=none", "--no-live", "--no-cache")
    assert result.returncode == 3, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("agentsim: failed: backend '") and "decisions fell back" in last, last
    assert json.loads((out / "summary.json").read_text())["runs"][0]["status"] == "failed"


def test_a_retry_after_of_an_hour_fails_the_call_within_its_deadline(tmp_path: Path, standin_server: Any) -> None:
    """Waiting an hour would outlast --deadline: the call fails at once and the run stops (the
    subprocess's own timeout is the bound that an hour's wait would break)."""
    server = standin_server(faults={"429_retry_after": 1.0}, **SERVER)
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", spec("openai", server.url), "--out", str(out), "--set", "agents=8",
                 "--set", "max_rounds=100", "--set", "stop_at=none", "--deadline", "20", "--no-live", "--no-cache",
                 timeout=60)
    assert result.returncode == 3, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "asks to wait 3600 s (Retry-After)" in last and "--deadline 20" in last, last


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_outage_records_no_fallback_and_resume_equals_an_uninterrupted_run(tmp_path: Path, standin_server: Any,
                                                                            provider: str) -> None:
    """The server answers 40 requests, then 503 to every one: the run stops before the first
    encounter whose calls failed (nothing of the outage is recorded), and --resume once the
    server is back records exactly what a run that never met the outage records."""
    server = standin_server(capacity=8, faults={"503": 1.0}, healthy_first=40, seed=7)
    out = tmp_path / "out"
    assert run(out, spec(provider, server.url), 6, resume=False) == 3
    assert recorded(out)["without_reply"] == 0
    server.faults({})
    assert run(out, spec(provider, server.url), 6, resume=True) == 0
    assert run(tmp_path / "whole", spec(provider, server.url), 6, resume=False) == 0
    assert rows(out) == rows(tmp_path / "whole")


def rows(out: Path) -> dict[str, list[tuple[Any, ...]]]:
    connection = sqlite3.connect(out / "agentsim.db")
    try:
        return {"encounters": list(connection.execute("SELECT run, t, round, outcome FROM encounters ORDER BY run, t")),
                "decisions": list(connection.execute(
                    "SELECT run, t, agent, attempt, action, payoff, parsed, context, reply, error, fallback FROM decisions "
                    "ORDER BY run, t, agent, attempt"))}
    finally:
        connection.close()
