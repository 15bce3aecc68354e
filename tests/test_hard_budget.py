"""`--max-cost` is hard: an unpriced model is refused at start-up, prices are checked, and a
server's token counts are not trusted where they cannot be true (absent, below zero): the
requests that reach the server (counted there) stay within the budget."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, Quiet, cli
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.errors import BudgetExhausted, UserError
from agentsim.games.naming import NamingGame
from agentsim.llm.limiter import Limits
from agentsim.llm.prices import register_price
from agentsim.llm.retries import RetryPolicy
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig

NAMING = str(ROOT / "scenarios" / "naming_game.py")
QUICK = ("--set", "agents=8", "--set", "max_rounds=3", "--no-live", "--no-cache")


def test_max_cost_with_an_unpriced_model_is_refused_at_start_up(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8)
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", f"openai:gpt-unreleased-model@{server.url}/v1", "--max-cost", "0.00005", "--out", str(out), *QUICK)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "'gpt-unreleased-model'" in line and "AGENTSIM_PRICES" in line, line
    assert server.stats.requests == 0 and not out.exists()


def test_a_price_given_in_agentsim_prices_is_used(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8)
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"gpt-5": [1.25, 10.0]}))
    result = cli(NAMING, "--backend", f"openai:gpt-5@{server.url}/v1", "--max-cost", "5", "--out", str(tmp_path / "out"),
                 *QUICK, env={**_environment(), "AGENTSIM_PRICES": str(table)})
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["runs"][0]["cost_usd"] > 0


@pytest.mark.parametrize("table", [{"m": [float("nan"), 1]}, {"m": [-1, 1]}, {"m": [1, "free"]}, {"m": [1]}, [1, 2],
                                   {"": [1, 1]}], ids=["nan", "negative", "text", "one-price", "list", "empty-name"])
def test_prices_are_validated(tmp_path: Path, table: Any) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(table))
    result = cli(NAMING, "--backend", "openai:m@http://127.0.0.1:9/v1", "--max-cost", "1", "--out", str(tmp_path / "out"),
                 *QUICK, env={**_environment(), "AGENTSIM_PRICES": str(path)})
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "AGENTSIM_PRICES" in line, line
    assert not (tmp_path / "out").exists()


def test_register_price_refuses_what_is_not_a_price() -> None:
    for prompt, completion in ((float("nan"), 1.0), (float("inf"), 1.0), (-0.5, 1.0), (True, 1.0)):
        with pytest.raises(UserError, match="finite numbers >= 0"):
            register_price("m", prompt, completion)


@pytest.mark.parametrize("usage", ["negative", "absent"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "tgi"])
def test_usage_a_server_cannot_report_does_not_buy_requests(tmp_path: Path, standin_server: Any, usage: str,
                                                            provider: str) -> None:
    """At $1000 per million tokens a naming-game call costs about $0.15 or more, whatever the
    server says it cost: a $2 budget lets at most 20 requests reach the server (a server
    reporting -1,000,000 tokens a call let hundreds through)."""
    server = standin_server(capacity=8, usage=usage)
    register_price("priced-model", 1000.0, 1000.0)
    if provider == "tgi":
        register_price(server.url, 1000.0, 1000.0)  # TGI's model is named by its URL
    backend = {"openai": f"openai:priced-model@{server.url}/v1", "anthropic": f"anthropic:priced-model@{server.url}",
               "tgi": f"tgi:{server.url}"}[provider]
    # Two calls at once: what is reserved for calls in flight (their most) cannot leave half the budget unspent.
    llm = BackendOptions(retry=RetryPolicy(max_attempts=4, base_s=0.005, cap_s=0.05, deadline_s=10), cache=False,
                         max_cost_usd=2.0, limits=Limits(max_in_flight=2))
    experiment = Experiment(ExperimentConfig(scenario=NamingGame(agents=8, max_rounds=200, stop_at="none"),
                                             out=tmp_path / "out", backend=backend, seed=3, llm=llm), Quiet())
    experiment.open()
    with pytest.raises(BudgetExhausted, match="--max-cost 2 reached"):
        asyncio.run(experiment.run())
    assert 0 < server.stats.requests <= 20, f"{server.stats.requests} requests reached the server"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert 1.0 < summary["budget"]["cost_usd"] <= 2.0
    assert summary["runs"][0]["prompt_tokens"] > 0 and summary["runs"][0]["completion_tokens"] > 0


def _environment() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if key != "AGENTSIM_PRICES"}


pytestmark = pytest.mark.usefixtures("prices_restored")  # (conftest.py)
