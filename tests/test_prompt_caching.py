"""Prices from genai-prices, prompt-cache usage read from each provider and priced as billed,
Anthropic's breakpoints where a prefix is shared, and a budget that counts the billed figure."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import cli

from agentsim.errors import UserError
from agentsim.llm import prices
from agentsim.llm.anthropic_backend import CacheBreakpoints, min_cacheable_tokens
from agentsim.llm.openai_backend import read_completion
from agentsim.llm.prices import Price, cost_usd, price_for
from agentsim.scenario_files import load_scenario

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "backends"))
from standin_server import ServerConfig, replies_from_run  # noqa: E402 (after the sys.path line)

# The naming game's standard prompt with long rules before what changes (options, history):
# every call's prompt begins with the same 1,500 tokens, enough for Claude Sonnet's prompt cache.
LONG_RULES = (Path(__file__).resolve().parent.parent / "agentsim/games/naming/prompts/standard.txt").read_text().replace(
    "[system]\n", "[system]\n" + " ".join(f"Rule {n}: matching actions earn points and mismatches cost points."
                                         for n in range(1, 90)) + "\n", 1)


pytestmark = pytest.mark.usefixtures("prices_restored")  # (conftest.py)


def test_hosted_models_are_priced_from_genai_prices_with_their_cached_input_prices() -> None:
    sonnet = price_for("claude-3-5-sonnet-20241022")
    assert sonnet is not None and sonnet.source.startswith("genai-prices")
    assert sonnet.cache_read_usd_per_mtok == pytest.approx(sonnet.input_usd_per_mtok / 10)
    assert sonnet.cache_write_usd_per_mtok is not None and sonnet.cache_write_usd_per_mtok > sonnet.input_usd_per_mtok
    mini = price_for("gpt-4o-mini-2024-07-18")  # a dated snapshot finds its model
    assert mini is not None and mini.cache_read_usd_per_mtok is not None
    assert mini.cache_read_usd_per_mtok < mini.input_usd_per_mtok
    assert price_for("my-own-llama") is None and cost_usd("my-own-llama", 10**6, 10**6) == 0.0


def test_there_is_no_hand_written_price_table_left() -> None:
    assert not hasattr(prices, "PRICES")
    assert prices.USER_PRICES == {} or all(price.source != "" for price in prices.USER_PRICES.values())


def test_cached_and_written_input_is_billed_at_its_own_price() -> None:
    price = Price(input_usd_per_mtok=3.0, output_usd_per_mtok=15.0, cache_read_usd_per_mtok=0.3,
                  cache_write_usd_per_mtok=3.75)
    # 1M prompt tokens: 600k read from the cache, 100k written, 300k fresh; 1M output tokens
    assert price.cost(10**6, 10**6, cached_tokens=600_000, cache_write_tokens=100_000) == pytest.approx(
        0.3 * 3.0 + 0.6 * 0.3 + 0.1 * 3.75 + 15.0)
    assert price.cost(100, 0, cached_tokens=500, cache_write_tokens=-5) == pytest.approx(100 * 0.3 / 1e6)  # clamped
    plain = Price(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0)  # no cache prices: cached input billed as input
    assert plain.cost(10**6, 0, cached_tokens=10**6) == pytest.approx(1.0)


def test_agentsim_prices_overrides_genai_prices_and_takes_cache_prices(tmp_path: Path, monkeypatch: Any) -> None:
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"gpt-4o-mini": [9.0, 9.0],
                                 "house-model": {"input": 1.0, "output": 2.0, "cache_read": 0.5, "cache_write": 1.5}}))
    monkeypatch.setenv("AGENTSIM_PRICES", str(table))
    prices.load_user_prices()
    mini, house = price_for("gpt-4o-mini"), price_for("house-model-v2")
    assert mini is not None and mini.input_usd_per_mtok == 9.0 and "AGENTSIM_PRICES" in mini.source
    assert house is not None and house.cache_read_usd_per_mtok == 0.5 and house.cache_write_usd_per_mtok == 1.5
    table.write_text(json.dumps({"m": {"input": 1.0, "output": 2.0, "cache": 3.0}}))
    monkeypatch.setenv("AGENTSIM_PRICES", str(tmp_path / "prices.json") + "")
    prices._loaded_from = None
    with pytest.raises(UserError, match="AGENTSIM_PRICES"):
        prices.load_user_prices()


def test_openai_cached_tokens_are_read_from_the_usage() -> None:
    body = {"choices": [{"message": {"content": "hi"}}], "model": "gpt-4o-mini",
            "usage": {"prompt_tokens": 2000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1792}}}
    completion = read_completion(json.dumps(body).encode(), {}, "gpt-4o-mini")
    assert (completion.prompt_tokens, completion.cached_prompt_tokens, completion.cache_write_tokens) == (2000, 1792, 0)
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": -3}  # a count a budget cannot trust is none
    assert read_completion(json.dumps(body).encode(), {}, "gpt-4o-mini").cached_prompt_tokens == 0


def test_breakpoints_go_only_on_prefixes_an_earlier_request_shared() -> None:
    rules = "rules " * 1000  # about 1,500 tokens
    plan = CacheBreakpoints(min_tokens=1024)
    system, messages = plan.mark(rules + "round 1", [{"role": "user", "content": "go"}])
    assert system == rules + "round 1" and messages == [{"role": "user", "content": "go"}]  # seen once: no premium paid
    system, messages = plan.mark(rules + "round 2", [{"role": "user", "content": "go"}])
    head, tail = system
    assert head["cache_control"] == {"type": "ephemeral"} and "cache_control" not in tail
    assert head["text"] + tail["text"] == rules + "round 2" and len(head["text"]) > 4 * 1024  # split between words
    assert head["text"].endswith("rules") and tail["text"].startswith(" ")
    assert messages == [{"role": "user", "content": "go"}]
    # A conversation: the turns before the newest are what the previous call sent.
    chat = CacheBreakpoints(min_tokens=1024)
    history = [{"role": "user", "content": "long " * 1000}]
    chat.mark("", history)
    history = [*history, {"role": "assistant", "content": "7"}, {"role": "user", "content": "next round"}]
    system, marked = chat.mark("", history)
    assert system == "" and marked[0]["content"] == [{"type": "text", "text": history[0]["content"],
                                                       "cache_control": {"type": "ephemeral"}}]
    assert marked[1:] == history[1:]
    short = CacheBreakpoints(min_tokens=1024)  # too short to be cached: never marked
    for _ in range(3):
        assert short.mark("brief rules", [{"role": "user", "content": "go"}])[0] == "brief rules"
    assert min_cacheable_tokens("claude-3-5-haiku-latest") == 2048 and min_cacheable_tokens("claude-3-5-sonnet-x") == 1024


@pytest.fixture(scope="module")
def anthropic_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A recorded stand-in run of the long-rules game, a server replaying it, and a runner
    of the same run over the Anthropic route; the cached and uncached runs made once."""
    from servers import ServerThread

    work = tmp_path_factory.mktemp("anthropic_runs")
    template = work / "long_rules.txt"
    template.write_text(LONG_RULES)
    scenario_file = work / "long_rules_game.py"
    scenario_file.write_text("from agentsim.games.naming import NamingGame\n"
                             f"scenario = NamingGame(agents=4, max_rounds=4, prompt={str(template)!r})\n")
    recorded = work / "recorded"
    assert cli(str(scenario_file), "--runs", "1", "--no-live", "--out", str(recorded), cwd=work).returncode == 0
    scenario, _ = load_scenario(scenario_file)
    replies = replies_from_run(recorded, scenario.for_experiment(0))
    servers: list[Any] = []

    def run(name: str, *flags: str) -> tuple[Any, Path]:
        server = ServerThread(ServerConfig(replies={key: list(queue) for key, queue in replies.items()}))
        servers.append(server)
        out = work / name
        result = cli(str(scenario_file), "--runs", "1", "--no-live", "--no-cache", "--no-probe", "--out", str(out),
                     "--backend", f"anthropic:claude-3-5-sonnet-latest@{server.url}", *flags, cwd=work)
        return result, out

    (first, cached), (second, uncached) = run("cached"), run("uncached", "--no-cache-breakpoints")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    yield run, cached, uncached
    for server in servers:
        server.stop()


def test_anthropic_cache_usage_is_read_and_priced_as_billed(anthropic_runs: Any) -> None:
    """Over HTTP with the real SDK: the cached run's recorded usage splits its input tokens, and
    its cost is the billed one, under the uncached run's."""
    _, *outs = anthropic_runs
    cached, uncached = (json.loads((out / "summary.json").read_text())["usage_by_backend"] for out in outs)
    (cached_usage,), (uncached_usage,) = cached.values(), uncached.values()
    assert cached_usage["prompt_tokens"] == uncached_usage["prompt_tokens"]  # the same prompts, every token counted
    assert cached_usage["cached_prompt_tokens"] > cached_usage["prompt_tokens"] / 2
    assert cached_usage["cache_write_tokens"] > 0
    assert uncached_usage["cached_prompt_tokens"] == uncached_usage["cache_write_tokens"] == 0
    assert cached_usage["cost_usd"] < 0.6 * uncached_usage["cost_usd"]
    summary = json.loads((outs[0] / "summary.json").read_text())
    assert summary["prices"]["claude-3-5-sonnet-latest"]["source"].startswith("genai-prices")


def test_the_budget_counts_the_billed_cost_of_cached_prompts(anthropic_runs: Any) -> None:
    """A --max-cost the uncached run passes is enough for the cached one. (A hard budget stops
    a run when what is left of it is less than one request's reservation, the most that request
    may cost: here a third of the gap between the two runs' costs.)"""
    run, cached_out, uncached_out = anthropic_runs
    cached_cost = json.loads((cached_out / "summary.json").read_text())["runs"][0]["cost_usd"]
    uncached_cost = json.loads((uncached_out / "summary.json").read_text())["runs"][0]["cost_usd"]
    budget = f"{cached_cost + 0.75 * (uncached_cost - cached_cost):.6f}"
    within, _ = run("budget-cached", "--max-cost", budget)
    past, _ = run("budget-uncached", "--no-cache-breakpoints", "--max-cost", budget)
    assert within.returncode == 0, within.stderr
    assert past.returncode == 4, past.stderr  # the budget stops the uncached run


@pytest.mark.parametrize("route", ["anthropic", "openai"])
def test_what_a_provider_reports_of_its_prompt_cache_becomes_the_record(tmp_path: Path, route: str) -> None:
    """The usage each answer carried (Anthropic: input_tokens apart from cache_read_input_tokens
    and cache_creation_input_tokens; OpenAI: prompt_tokens with cached_tokens inside them) is what
    summary.json records: every input token once, the cached and written ones among them, and
    their cost as billed (the server's bill, calc_price of the same usage)."""
    from servers import ServerThread

    template = tmp_path / "long_rules.txt"
    template.write_text(LONG_RULES)
    scenario_file = tmp_path / "long_rules_game.py"
    scenario_file.write_text("from agentsim.games.naming import NamingGame\n"
                             f"scenario = NamingGame(agents=4, max_rounds=4, prompt={str(template)!r})\n")
    recorded = tmp_path / "recorded"
    assert cli(str(scenario_file), "--runs", "1", "--no-live", "--out", str(recorded), cwd=tmp_path).returncode == 0
    scenario, _ = load_scenario(scenario_file)
    server = ServerThread(ServerConfig(replies=replies_from_run(recorded, scenario.for_experiment(0))))
    try:
        backend = (f"anthropic:claude-3-5-sonnet-latest@{server.url}" if route == "anthropic"
                   else f"openai:gpt-4o-mini@{server.url}/v1")
        out = tmp_path / "out"
        result = cli(str(scenario_file), "--runs", "1", "--no-live", "--no-cache", "--no-probe", "--out", str(out),
                     "--backend", backend, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        bills = list(server.stats.bills)
    finally:
        server.stop()
    (usage,) = json.loads((out / "summary.json").read_text())["usage_by_backend"].values()
    assert usage["calls"] == len(bills)
    assert usage["prompt_tokens"] == sum(bill["input_tokens"] for bill in bills)
    assert usage["cached_prompt_tokens"] == sum(bill["cache_read_tokens"] for bill in bills) > 0
    assert usage["cache_write_tokens"] == sum(bill["cache_write_tokens"] for bill in bills)
    assert (usage["cache_write_tokens"] > 0) == (route == "anthropic")  # OpenAI reports no writes
    assert usage["completion_tokens"] == sum(bill["output_tokens"] for bill in bills)
    assert usage["cost_usd"] == pytest.approx(sum(bill["usd"] for bill in bills), abs=2e-6)
