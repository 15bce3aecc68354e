"""The backends from the command line, as a user runs them: keys never written anywhere, a
missing or refused key and a --replay miss each one line and exit 2, a mixed population of
two backends with each agent's model recorded, and the budget guards."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from helpers import ROOT, cli
from servers import standin_server  # noqa: F401  (the fixture)
from test_cli import assert_user_error


def assert_run_stopped_by_user_error(result: Any, *fragments: str) -> None:
    """A user error found once the run is going: the log lines so far, then one error line."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[-1].startswith("agentsim: error: ") and all(fragment in lines[-1] for fragment in fragments), lines[-1]

NAMING = str(ROOT / "scenarios" / "naming_game.py")
MIXED = str(ROOT / "scenarios" / "mixed_models.py")
QUICK = ("--set", "agents=8", "--set", "max_rounds=3", "--set", "stop_at=none", "--no-live",
         "--max-attempts", "12", "--timeout", "5")
SECRET = "sk-test-0123456789abcdefSECRET"


def environment(**values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY") and key != "HF_TOKEN"}
    env.update(values)
    return env


def every_byte_under(directory: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file())


def test_the_key_never_reaches_the_store_the_cache_the_logs_or_errors(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8, api_key=SECRET, faults={"500": 0.2, "429_retry_after": 0.1}, retry_after_s=0.01)
    cache = tmp_path / "cache.db"
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", "openai:stand-in-model", "--base-url", server.url + "/v1", "--out", str(out),
                 "--cache", str(cache), *QUICK, env=environment(OPENAI_API_KEY=SECRET))
    assert result.returncode == 0, result.stderr
    assert server.stats.answered > 0
    assert SECRET.encode() not in every_byte_under(out)
    assert SECRET.encode() not in cache.read_bytes()
    assert SECRET not in result.stdout + result.stderr
    # A refused key: one line naming the variable, without the key, and nothing lost.
    wrong = SECRET[:-6] + "WRONG!"
    refused = cli(NAMING, "--backend", "openai:stand-in-model", "--base-url", server.url + "/v1",
                  "--out", str(tmp_path / "refused"), "--no-cache", *QUICK, env=environment(OPENAI_API_KEY=wrong))
    assert_run_stopped_by_user_error(refused, "refused the API key in OPENAI_API_KEY")
    assert wrong not in refused.stdout + refused.stderr and SECRET not in refused.stderr
    assert wrong.encode() not in every_byte_under(tmp_path / "refused")


def test_a_missing_key_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    for spec, variable in (("openai:gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic:claude-3-5-haiku-latest", "ANTHROPIC_API_KEY")):
        result = cli(NAMING, "--backend", spec, "--out", str(tmp_path / "out"), "--no-live", env=environment())
        assert_user_error(result, variable)
    assert not (tmp_path / "out").exists()


def test_replay_fails_cleanly_on_a_cache_miss(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8)
    result = cli(NAMING, "--backend", f"tgi:{server.url}", "--replay", "--cache", str(tmp_path / "empty.db"),
                 "--out", str(tmp_path / "out"), *QUICK, env=environment())
    assert_run_stopped_by_user_error(result, "--replay", "run without --replay")
    assert server.stats.requests == 0


def test_a_mixed_population_of_two_backends_records_each_agents_model(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8)
    openai_spec, tgi_spec = f"openai:model-a@{server.url}/v1", f"tgi:{server.url}"
    out = tmp_path / "out"
    result = cli(NAMING, "--population", f"{openai_spec}=5,{tgi_spec}=3", "--out", str(out), *QUICK, env=environment())
    assert result.returncode == 0, result.stderr
    connection = sqlite3.connect(out / "agentsim.db")
    models = dict(connection.execute("SELECT model, COUNT(*) FROM agents GROUP BY model"))
    assert models == {openai_spec: 5, tgi_spec: 3}
    by_model = dict(connection.execute("SELECT model, COUNT(*) FROM decisions_by_model GROUP BY model"))
    assert set(by_model) == {openai_spec, tgi_spec}
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["usage_by_backend"]) == {openai_spec, tgi_spec, f"{openai_spec} (start-up probe)",
                                                 f"{tgi_spec} (start-up probe)"}
    probe = 1  # each backend's start-up probe
    assert server.stats.by_route["openai"] == by_model[openai_spec] + probe
    assert server.stats.by_route["tgi"] == by_model[tgi_spec] + probe
    assert_user_error(cli(NAMING, "--population", f"{openai_spec}=5,{tgi_spec}=2", "--out", str(tmp_path / "bad"),
                          *QUICK, env=environment()), "add up to 7", "agents=8")


def test_the_mixed_models_scenario_runs_on_two_stand_in_labels(tmp_path: Path) -> None:
    result = cli(MIXED, "--out", str(tmp_path / "out"), "--set", "max_rounds=3", "--no-live")
    assert result.returncode == 0, result.stderr
    connection = sqlite3.connect(tmp_path / "out" / "agentsim.db")
    assert dict(connection.execute("SELECT model, COUNT(*) FROM agents GROUP BY model")) == {
        "stand-in:family-a": 12, "stand-in:family-b": 12}


def test_a_population_must_fit_every_variant_of_a_grid(tmp_path: Path) -> None:
    """SIGN's grid has N 12 and 24: a population of 12 fits only half of it."""
    sign = str(ROOT / "scenarios" / "sign_schema.py")
    assert_user_error(cli(sign, "--population", "stand-in:a=6,stand-in:b=6", "--out", str(tmp_path / "grid"), "--no-live"),
                      "add up to 12", "variants have agents=12, 24", "--set agents=12")
