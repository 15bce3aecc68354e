"""`python -m agentsim estimate`: calls, tokens, cost and time before anything is spent, within
10% of what a stand-in run records, with no key for the hosted model it prices."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from helpers import cli

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
                                       overrides=overrides), timed_calls=3)
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
