"""`python -m agentsim estimate`: calls, tokens, cost and time before anything is spent, within
10% of what a stand-in run records, with no key for the hosted model it prices."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import cli
from servers import standin_server  # noqa: F401 (a fixture)

from agentsim.configure import ExperimentOptions
from agentsim.estimate import ESTIMATE_FILE, estimate

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("naming_game.py", {"agents": "8", "max_rounds": "6"}, 2),
    ("commons_fishing.py", {"months": "1"}, 2),
    ("donor_game.py", {"generations": "1"}, 1),
]


def _recorded(out: Path) -> tuple[int, int, int]:
    """Calls, prompt tokens and reply tokens the stand-in run recorded."""
    with sqlite3.connect(out / "agentsim.db") as connection:
        calls, prompt, reply = connection.execute(
            "SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM decisions WHERE reply IS NOT NULL").fetchone()
    return calls, prompt, reply


@pytest.mark.parametrize(("file", "overrides", "runs"), CASES, ids=[case[0].removesuffix(".py") for case in CASES])
def test_the_estimate_is_within_ten_percent_of_a_stand_in_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                file: str, overrides: dict[str, str], runs: int) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # a hosted model with no key: it still estimates
    scenario = str(ROOT / "scenarios" / file)
    found = estimate(ExperimentOptions(scenario=scenario, backend="anthropic:claude-3-5-haiku-latest", runs=runs,
                                       overrides=overrides))
    out = tmp_path / "standin"
    arguments = [argument for key, value in overrides.items() for argument in ("--set", f"{key}={value}")]
    assert cli(scenario, "--runs", str(runs), "--no-live", "--out", str(out), *arguments).returncode == 0
    calls, prompt, reply = _recorded(out)
    totals = found.totals()
    assert totals.calls == pytest.approx(calls, rel=0.10)
    assert totals.prompt_tokens == pytest.approx(prompt, rel=0.10)
    assert totals.completion_tokens == pytest.approx(reply, rel=0.10)
    assert totals.calls_upper >= totals.calls and totals.completion_tokens_upper >= totals.completion_tokens
    cost = found.cost()
    assert cost is not None and 0 < cost <= (found.cost(upper=True) or 0)
    assert found.wall_s > 0 and not found.tokens_exact
    assert any("assumed" in note for note in found.notes)  # no key: no timed call, and it says so


def test_estimate_prints_and_a_run_in_the_same_directory_shows_it_beside_what_it_spent(tmp_path: Path) -> None:
    out = tmp_path / "out"
    scenario = str(ROOT / "scenarios" / "naming_game.py")
    small = ("--set", "agents=6", "--set", "max_rounds=3", "--runs", "1")
    environment = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    printed = cli("estimate", scenario, "--backend", "openai:gpt-4o-mini", *small, "--out", str(out), env=environment)
    assert printed.returncode == 0, printed.stderr
    assert "gpt-4o-mini" in printed.stdout and "calls" in printed.stdout and "$" in printed.stdout
    written = json.loads((out / ESTIMATE_FILE).read_text())
    assert written["totals"]["calls"] > 0 and written["cost_usd"] > 0
    assert cli(scenario, *small, "--no-live", "--out", str(out)).returncode == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["estimate"]["totals"]["calls"] == written["totals"]["calls"]
    assert cli("report", str(out)).returncode == 0
    assert (out / "report" / "table_estimate.csv").exists()


def test_estimate_refuses_what_it_cannot_estimate(tmp_path: Path) -> None:
    result = cli("estimate", "--backend", "openai:gpt-4o-mini")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    result = cli("estimate", str(ROOT / "scenarios" / "naming_game.py"), "--backend", "nonsense:x")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr


GUESSING = str(ROOT / "scenarios" / "gamabench" / "guessing_game.py")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The guessing game (each player's conversation kept, 24 rounds) recorded on the stand-in,
    replayed over HTTP through a provider's route against the stand-in server, which caches
    prompts and bills as the provider documents: the run's actual calls, tokens and bill."""
    import sys

    from servers import ServerThread

    sys.path.insert(0, str(ROOT / "backends"))
    from standin_server import ServerConfig, replies_from_run

    from agentsim.scenario_files import load_scenario

    work = tmp_path_factory.mktemp("replayed")
    common = ("--set", "max_rounds=24", "--runs", "1", "--seed", "0", "--no-live")
    assert cli(GUESSING, *common, "--out", str(work / "recorded"), cwd=work).returncode == 0
    scenario, _ = load_scenario(GUESSING)
    replies = replies_from_run(work / "recorded", scenario.with_overrides({"max_rounds": "24"}).for_experiment(0))

    def replay(backend: str) -> dict[str, Any]:
        server = ServerThread(ServerConfig(replies={key: list(queue) for key, queue in replies.items()}, capacity=16))
        try:
            out = work / backend.replace(":", "_")
            route = f"{backend}@{server.url}/v1" if backend.startswith("openai") else f"{backend}@{server.url}"
            result = cli(GUESSING, *common, "--backend", route, "--no-cache", "--no-probe", "--out", str(out), cwd=work)
            assert result.returncode == 0, result.stderr
            bills = list(server.stats.bills)
        finally:
            server.stop()
        return {"calls": len(bills), "prompt_tokens": sum(bill["input_tokens"] for bill in bills),
                "cached": sum(bill["cache_read_tokens"] for bill in bills),
                "written": sum(bill["cache_write_tokens"] for bill in bills), "cost": sum(bill["usd"] for bill in bills)}

    return replay


@pytest.mark.parametrize("backend", ["anthropic:claude-3-5-sonnet-latest", "openai:gpt-4o", "anthropic:claude-sonnet-4-5"])
def test_the_estimate_prices_caching_and_tiers_as_the_run_is_billed(replayed: Any, backend: str) -> None:
    """Calls, tokens, cache reads and writes and cost within 10% of the bill of the same run;
    the figure to the end above it. (Without the cache the guessing game's estimate was 2.5
    times its bill on Claude; at the dearest tier, claude-sonnet-4-5's was twice it.)"""
    found = estimate(ExperimentOptions(scenario=GUESSING, backend=backend, runs=1, seed=0,
                                       overrides={"max_rounds": "24"}))
    actual = replayed(backend)
    totals = found.totals()
    assert actual["cached"] > actual["prompt_tokens"] / 4, "the conversation is read from the cache"
    assert totals.calls == pytest.approx(actual["calls"], rel=0.10)
    assert totals.prompt_tokens == pytest.approx(actual["prompt_tokens"], rel=0.10)
    assert totals.cached_prompt_tokens == pytest.approx(actual["cached"], rel=0.10)
    assert totals.cache_write_tokens == pytest.approx(actual["written"], rel=0.10, abs=200)
    assert found.cost() == pytest.approx(actual["cost"], rel=0.10)
    assert (found.cost(upper=True) or 0) >= actual["cost"]
    assert totals.prompt_tokens_upper >= actual["prompt_tokens"] and totals.calls_upper >= actual["calls"]


def test_the_estimate_calls_no_paid_api_unless_timed_calls_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 standin_server: Any) -> None:
    server = standin_server(capacity=4)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-key-that-pays")
    scenario = str(ROOT / "scenarios" / "naming_game.py")
    small = ("--set", "agents=6", "--set", "max_rounds=2", "--runs", "1", "--backend", "openai:gpt-4o-mini",
             "--base-url", f"{server.url}/v1")
    printed = cli("estimate", scenario, *small)
    assert printed.returncode == 0, printed.stderr
    assert server.stats.requests == 0 and "assumed" in printed.stdout
    timed = cli("estimate", scenario, *small, "--timed-calls", "2")
    assert timed.returncode == 0, timed.stderr
    assert server.stats.requests >= 2 and "measured" in timed.stdout
