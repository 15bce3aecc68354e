"""Money exact (issue 45), against the stand-in server billing as the providers document (each
request priced by genai-prices' own `calc_price` from the usage it counted; a batch's at half;
a request answered after its client went away billed all the same):

- every request priced at the tier its own input tokens fall in (the recorded cost, the
  budget, the price recorded with the experiment), for every tiered model genai-prices has;
- the recorded cost equals the bill for a tiered model, a kept conversation read from the
  prompt cache, and a batch;
- a stop and a `--resume` under a budget never bill more than the budget, with a provider
  whose tokenizer counts more tokens than four characters a token;
- a kill while a batch's create is answered, then `--resume`, submits one batch; a create
  whose answer is lost is not retried; a batch the budget refuses records nothing;
- a model genai-prices prices at another provider (Groq's Llama) is accepted under --max-cost.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price, data_snapshot
from helpers import ROOT, cli
from servers import ServerThread, standin_server  # noqa: F401 (a fixture)

from agentsim.llm.base import Message, Request, Sampling
from agentsim.llm.prices import price_for
from agentsim.llm.specs import BackendOptions, backend_price, build_backend

sys.path.insert(0, str(ROOT / "backends"))
from standin_server import ServerConfig, replies_from_run

from agentsim.scenario_files import load_scenario

pytestmark = pytest.mark.usefixtures("prices_restored")  # (conftest.py)

NAMING = str(ROOT / "scenarios" / "naming_game.py")
PROBE = str(ROOT / "scenarios" / "individual_bias.py")
GUESSING = str(ROOT / "scenarios" / "gamabench" / "guessing_game.py")
SMALL = ("--set", "agents=6", "--set", "max_rounds=4", "--runs", "1", "--no-live")


def _tiered_models() -> list[tuple[str, str]]:
    """(provider, model) of every OpenAI and Anthropic model genai-prices prices in tiers."""
    found = []
    for provider in data_snapshot.get_snapshot().providers:
        if provider.id not in ("openai", "anthropic"):
            continue
        for model in provider.models:
            try:
                prices = model.get_prices(datetime.now(tz=UTC))
            except Exception:  # a model with no current price
                continue
            if any(getattr(value, "tiers", None) for value in prices.__dict__.values()) and \
                    getattr(prices, "input_mtok", None) is not None:
                found.append((provider.id, model.id))
    return found


TIERED = _tiered_models()


def test_genai_prices_has_tiered_models_of_both_providers() -> None:
    families = {model.split("-")[0] + "-" + model.split("-")[1].split(".")[0] for _, model in TIERED}
    assert {provider for provider, _ in TIERED} == {"openai", "anthropic"} and len(families) >= 3, TIERED


@pytest.mark.parametrize(("provider", "model"), TIERED, ids=[model for _, model in TIERED])
def test_each_request_is_priced_at_the_tier_its_input_falls_in(provider: str, model: str) -> None:
    """As genai-prices' calc_price bills it: below a tier's start, the base rates on every token;
    past it, the tier's rates on every token (input, cached, written, output)."""
    price = price_for(model, (provider,))
    assert price is not None and price.tiers, price
    start = price.tiers[0].above
    for tokens in (300, start - 1, start, start + 1, 3 * start):
        for cached, written in ((0, 0), (tokens // 3, 0), (tokens // 4, tokens // 5)):
            usage = Usage(input_tokens=tokens, output_tokens=40, cache_read_tokens=cached, cache_write_tokens=written)
            billed = float(calc_price(usage, model_ref=model, provider_id=provider).total_price)
            assert price.cost(tokens, 40, cached_tokens=cached, cache_write_tokens=written) == \
                pytest.approx(billed, rel=1e-9, abs=1e-12), (tokens, cached, written)
    assert price.cost(300, 40) < price.at(start + 1).cost(300, 40)  # a prompt of a few hundred tokens: the base tier
    row = price.as_dict()  # the price recorded with the experiment lists its tiers
    assert row["tiers"][0]["above"] == start and row["input_usd_per_mtok"] == price.input_usd_per_mtok


def _bill(server: ServerThread) -> float:
    return float(server.stats.bill_usd)


def _summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


def _usage(out: Path) -> dict[str, Any]:
    (usage,) = _summary(out)["usage_by_backend"].values()
    return dict(usage)


def _route(provider: str, model: str, url: str) -> str:
    return f"openai:{model}@{url}/v1" if provider == "openai" else f"anthropic:{model}@{url}"


@pytest.mark.parametrize("probe", [True, False], ids=["probed", "no-probe"])
@pytest.mark.parametrize(("provider", "model"), [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5.4")])
def test_the_recorded_cost_of_a_tiered_model_is_its_bill(tmp_path: Path, standin_server: Any, provider: str,
                                                          model: str, probe: bool) -> None:
    """What the runs record costs what the provider billed, the start-up probe included: its
    call is recorded on a line of its own (`SPEC (start-up probe)`), apart from the agents'."""
    server = standin_server(capacity=8)
    out = tmp_path / "out"
    spec = _route(provider, model, server.url)
    result = cli(NAMING, *SMALL, "--backend", spec, *([] if probe else ["--no-probe"]), "--no-cache",
                 "--max-cost", "5", "--out", str(out))
    assert result.returncode == 0, result.stderr
    recorded = _summary(out)["usage_by_backend"]
    assert set(recorded) == {spec, f"{spec} (start-up probe)"} if probe else {spec}
    assert sum(usage["calls"] for usage in recorded.values()) == len(server.stats.bills) > 0
    if probe:
        probed = recorded[f"{spec} (start-up probe)"]
        (first, *_) = server.stats.bills  # the probe is the first request the provider billed
        assert probed["calls"] == 1 and probed["prompt_tokens"] == first["input_tokens"] and probed["cost_usd"] > 0
    recorded_cost = sum(usage["cost_usd"] for usage in recorded.values())
    assert recorded_cost == pytest.approx(_bill(server), abs=4e-6)  # summary.json keeps 6 decimals a line
    assert _summary(out)["budget"]["cost_usd"] == pytest.approx(_bill(server), abs=4e-6)
    assert _summary(out)["prices"][model]["tiers"], "the recorded price lists its tiers"


def test_a_request_past_the_tier_is_billed_and_recorded_at_the_tier(standin_server: Any) -> None:
    import asyncio

    from agentsim.llm.accounting import Budget

    server = standin_server(capacity=2)
    budget = Budget(max_cost_usd=50.0)
    backend = build_backend(f"anthropic:claude-sonnet-4-5@{server.url}", BackendOptions(cache=False), budget,
                            rules=[])
    long = Request(messages=(Message("system", "word " * 180_000), Message("user", "Answer with one word.")),
                   sampling=Sampling(max_tokens=8), seed=1)

    async def ask() -> Any:
        try:
            return await backend.complete(long)
        finally:
            await backend.aclose()

    completion = asyncio.run(ask())
    (request_bill,) = [bill for bill in server.stats.bills if bill["input_tokens"] > 200_000]
    assert completion.cost_usd == pytest.approx(request_bill["usd"], rel=1e-9)
    price = price_for("claude-sonnet-4-5")
    assert price is not None
    assert completion.cost_usd == pytest.approx(price.at(request_bill["input_tokens"]).cost(
        completion.prompt_tokens, completion.completion_tokens), rel=1e-9)
    assert completion.cost_usd > price.at(0).cost(completion.prompt_tokens, completion.completion_tokens) * 1.9
    assert budget.cost_usd == pytest.approx(_bill(server), rel=1e-9)  # the probe and the call, as billed


@pytest.fixture(scope="module")
def guessing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """GAMA-Bench's guessing game (each player's conversation kept) recorded on the stand-in,
    and a way to replay it over HTTP through a provider's route against a billing server."""
    work = tmp_path_factory.mktemp("guessing")
    common = ("--set", "max_rounds=24", "--runs", "1", "--seed", "0", "--no-live")
    recorded = work / "recorded"
    assert cli(GUESSING, *common, "--out", str(recorded), cwd=work).returncode == 0
    scenario, _ = load_scenario(GUESSING)
    replies = replies_from_run(recorded, scenario.with_overrides({"max_rounds": "24"}).for_experiment(0))
    servers: list[ServerThread] = []

    def replay(name: str, backend: str, *flags: str) -> tuple[ServerThread, Path]:
        server = ServerThread(ServerConfig(replies={key: list(queue) for key, queue in replies.items()}, capacity=16))
        servers.append(server)
        out = work / name
        result = cli(GUESSING, *common, "--backend", backend.format(url=server.url), "--no-cache", "--no-probe",
                     "--out", str(out), *flags, cwd=work)
        assert result.returncode == 0, result.stderr
        return server, out

    yield replay
    for server in servers:
        server.stop()


@pytest.mark.parametrize("backend", ["anthropic:claude-3-5-sonnet-latest@{url}", "openai:gpt-4o@{url}/v1"],
                         ids=["anthropic", "openai"])
def test_a_kept_conversation_read_from_the_prompt_cache_is_recorded_as_billed(guessing: Any, backend: str) -> None:
    server, out = guessing(backend.split(":")[0], backend)
    usage = _usage(out)
    assert usage["cached_prompt_tokens"] > 0, "the conversation is long enough to be cached"
    billed = server.stats.bills
    assert usage["calls"] == len(billed)
    assert usage["prompt_tokens"] == sum(bill["input_tokens"] for bill in billed)
    assert usage["cached_prompt_tokens"] == sum(bill["cache_read_tokens"] for bill in billed)
    assert usage["cache_write_tokens"] == sum(bill["cache_write_tokens"] for bill in billed)
    assert usage["cost_usd"] == pytest.approx(_bill(server), abs=2e-6)


def _environment(tmp_path: Path, name: str) -> dict[str, str]:
    return {**os.environ, "AGENTSIM_CACHE": str(tmp_path / f"{name}.db")}


def _moves(out: Path) -> int:
    with sqlite3.connect(out / "agentsim.db") as connection:
        return int(connection.execute("SELECT COUNT(*) FROM moves").fetchone()[0])


@pytest.mark.parametrize("probe", [True, False], ids=["probed", "no-probe"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_recorded_cost_of_a_batch_is_its_bill(tmp_path: Path, standin_server: Any, provider: str,
                                                  probe: bool) -> None:
    server = standin_server(capacity=16)
    model = "gpt-4o-mini" if provider == "openai" else "claude-3-5-haiku-latest"
    out = tmp_path / "out"
    result = cli(PROBE, *SMALL, "--backend", _route(provider, model, server.url), "--batch", "--batch-poll", "0.05",
                 *([] if probe else ["--no-probe"]), "--max-cost", "1", "--out", str(out),
                 env=_environment(tmp_path, "cache"))
    assert result.returncode == 0, result.stderr
    assert server.stats.batches_created == 1 and all(bill["batch"] for bill in server.stats.bills), server.stats.bills
    recorded = sum(usage["cost_usd"] for usage in _summary(out)["usage_by_backend"].values())
    assert recorded == pytest.approx(_bill(server), abs=2e-6)
    assert _summary(out)["budget"]["cost_usd"] == pytest.approx(_bill(server), abs=2e-6)


def test_a_stop_and_resumes_under_a_budget_never_bill_more_than_it(tmp_path: Path, standin_server: Any) -> None:
    """Requests in flight when the budget stops the runs are cancelled here and billed there;
    the provider counts 3.6 characters a token (four would undercount its bill)."""
    server = standin_server(capacity=16, service_time_s=0.05, chars_per_token=3.6)
    out = tmp_path / "out"
    backend = f"openai:gpt-4o@{server.url}/v1"
    common = ("--set", "agents=40", "--set", "max_rounds=40", "--set", "stop_at=none", "--runs", "2", "--no-live",
              "--no-cache", "--max-in-flight", "16")
    for budget, flags in (("0.02", ()), ("0.02", ("--resume",)), ("0.05", ("--resume",))):
        result = cli(NAMING, *common, "--backend", backend, "--max-cost", budget, "--out", str(out), *flags)
        assert result.returncode == 4, result.stderr  # stopped by the budget
        spent = _summary(out)["budget"]["cost_usd"]
        assert _bill(server) <= float(budget), f"billed ${_bill(server):.6f} under --max-cost {budget}"
        assert spent >= _bill(server) - 1e-6, "the budget counts at least what the provider billed"
    assert _bill(server) > 0.04  # the last session spent most of what it was allowed


def _batch_command(server: ServerThread, out: Path, provider: str, *flags: str) -> list[str]:
    model = "gpt-4o-mini" if provider == "openai" else "claude-3-5-haiku-latest"
    return [sys.executable, "-m", "agentsim", PROBE, *SMALL, "--backend", _route(provider, model, server.url), "--batch",
            "--batch-poll", "0.05", "--no-probe", "--out", str(out), *flags]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_kill_while_the_create_is_answered_then_resume_submits_one_batch(tmp_path: Path, standin_server: Any,
                                                                           provider: str) -> None:
    server = standin_server(capacity=16, batch_create_delay_s=30)  # the batch is made, its answer comes late
    out = tmp_path / "out"
    environment = _environment(tmp_path, "cache")
    process = subprocess.Popen(_batch_command(server, out, provider), env=environment, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while server.stats.batches_created == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    assert server.stats.batches_created == 1
    server.server.config.batch_create_delay_s = 0.0
    resumed = subprocess.run(_batch_command(server, out, provider, "--resume"), env=environment, capture_output=True,
                             text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert server.stats.batches_created == 1 and "found at the provider" in resumed.stderr + resumed.stdout
    assert _moves(out) == 6 * 4
    assert _usage(out)["cost_usd"] == pytest.approx(_bill(server), abs=2e-6)


@pytest.mark.parametrize("fault", ["500", "drop"])
def test_a_create_whose_answer_is_lost_is_looked_up_not_sent_again(tmp_path: Path, standin_server: Any,
                                                                   fault: str) -> None:
    """On an OpenAI-compatible URL (the SDK's retries were on for a create: three batches)."""
    server = standin_server(capacity=16, batch_create_fault=fault)
    out = tmp_path / "out"
    result = subprocess.run(_batch_command(server, out, "openai"), env=_environment(tmp_path, "cache"),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert server.stats.batches_created == 1
    assert _moves(out) == 6 * 4


def test_a_batch_the_budget_refuses_records_nothing_and_a_resume_that_fits_runs(tmp_path: Path,
                                                                                standin_server: Any) -> None:
    server = standin_server(capacity=16)
    out = tmp_path / "out"
    environment = _environment(tmp_path, "cache")
    refused = subprocess.run(_batch_command(server, out, "openai", "--max-cost", "0.00001"), env=environment,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 4, refused.stderr
    budget = _summary(out)["budget"]
    assert (budget["calls"], budget["cost_usd"]) == (0, 0.0)
    assert server.stats.batches_created == 0 and server.stats.requests == 0 and _bill(server) == 0
    resumed = subprocess.run(_batch_command(server, out, "openai", "--max-cost", "1", "--resume"), env=environment,
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert server.stats.batches_created == 1 and _moves(out) == 6 * 4


def test_a_model_genai_prices_prices_at_another_provider_is_priced_there() -> None:
    """Groq's Llama through OpenAI's protocol at Groq's address: Groq's price, so --max-cost
    accepts it; the same model at a server of your own has none (give it one)."""
    groq = backend_price("openai:llama-3.3-70b-versatile@https://api.groq.com/openai/v1", BackendOptions())
    assert groq is not None and (groq.input_usd_per_mtok, groq.output_usd_per_mtok) == (0.59, 0.79)
    assert "groq" in groq.source
    assert backend_price("openai:llama-3.3-70b-versatile@http://127.0.0.1:9/v1", BackendOptions()) is None
    hosted = backend_price("openai:gpt-4o", BackendOptions())
    assert hosted is not None and "openai" in hosted.source
    assert backend_price("local:smollm2", BackendOptions()) is None  # in process: not billed


def test_max_cost_accepts_a_model_priced_at_its_hosts_provider(tmp_path: Path) -> None:
    from helpers import Quiet

    from agentsim.games.naming import NamingGame
    from agentsim.runner import Experiment, ExperimentConfig

    llm = BackendOptions(max_cost_usd=1.0, base_url="https://api.groq.com/openai/v1")
    experiment = Experiment(ExperimentConfig(scenario=NamingGame(agents=4, max_rounds=2), out=tmp_path / "out",
                                             backend="openai:llama-3.3-70b-versatile", llm=llm), Quiet())
    experiment.open()  # no request leaves before a run
    try:
        assert experiment.session.prices()["llama-3.3-70b-versatile"]["source"].endswith("llama-3.3-70b-versatile)")
    finally:
        import asyncio

        asyncio.run(experiment.session.close(None))
