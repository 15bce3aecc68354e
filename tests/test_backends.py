"""Each backend through its real client over real HTTP against the stand-in server: a whole
naming game, every injected fault with nothing lost or recorded twice, Retry-After, the
in-flight cap (counted by the server), the adaptive limiter, the cache and --replay, and keys
never written anywhere."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Quiet
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.errors import BackendError, BudgetExhausted, ReplayMissError
from agentsim.games.naming import NamingGame, NamingSituation
from agentsim.llm.base import Request
from agentsim.llm.limiter import LimitedModel, Limits
from agentsim.llm.openai_backend import OpenAIModel
from agentsim.llm.openai_http import OpenAIHTTPModel
from agentsim.llm.prices import register_price
from agentsim.llm.retries import RetryingModel, RetryPolicy
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.store import Store

PROBE = 1  # the start-up probe: one tiny request before a backend's first (llm/health.py)
QUICK_RETRY = RetryPolicy(max_attempts=12, base_s=0.005, cap_s=0.05, deadline_s=30)


def specs(url: str) -> dict[str, str]:
    return {"openai": f"openai:stand-in-model@{url}/v1", "anthropic": f"anthropic:stand-in-model@{url}",
            "tgi": f"tgi:{url}"}


def game(**changes: Any) -> NamingGame:
    return NamingGame(**{"agents": 8, "max_rounds": 3, "stop_at": "none", "max_in_flight": 4, **changes})


def run(out: Path, backend: str = "stand-in", *, population: str = "", scenario: NamingGame | None = None,
        seed: int = 3, resume: bool = False, **options: Any) -> dict[str, Any]:
    llm = BackendOptions(**{"retry": QUICK_RETRY, "timeout_s": 5.0, **options})
    experiment = Experiment(ExperimentConfig(scenario=scenario or game(), out=out, backend=backend, seed=seed,
                                             population=population, llm=llm, resume=resume), Quiet())
    experiment.open()
    asyncio.run(experiment.run())
    return json.loads((out / "summary.json").read_text())


def recorded(out: Path) -> dict[str, list[tuple[Any, ...]]]:
    connection = sqlite3.connect(out / "agentsim.db")
    try:
        return {
            "encounters": list(connection.execute("SELECT run, t, round, outcome FROM encounters ORDER BY run, t")),
            "decisions": list(connection.execute(
                "SELECT run, t, agent, attempt, action, payoff, parsed, context, reply, error FROM decisions "
                "ORDER BY run, t, agent, attempt")),
        }
    finally:
        connection.close()


def assert_complete(out: Path, summary: dict[str, Any]) -> None:
    """Every interaction recorded once, in order, each decision answered by the server."""
    (run_summary,) = summary["runs"]
    assert run_summary["status"] == "done"
    rows = recorded(out)
    times = [t for _, t, _, _ in rows["encounters"]]
    assert times == list(range(run_summary["interactions"])), "an interaction was lost or recorded twice"
    moves = [row for row in rows["decisions"] if row[5] is not None]
    assert len(moves) == 2 * len(times)
    assert all(row[8] for row in moves), "a decision has no reply: a call was lost"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "tgi"])
def test_a_whole_naming_game_runs_through_each_backend(tmp_path: Path, standin_server: Any, provider: str) -> None:
    server = standin_server(capacity=8)
    summary = run(tmp_path / "out", specs(server.url)[provider],
                  scenario=game(stop_at="consensus", max_rounds=40, pairing="rounds"))
    assert_complete(tmp_path / "out", summary)
    (run_summary,) = summary["runs"]
    assert run_summary["consensus"] is True, "the stand-in rule over HTTP converges as it does in process"
    assert server.stats.answered == run_summary["calls"] > PROBE  # the start-up probe recorded too
    usage = summary["usage_by_backend"][specs(server.url)[provider]]
    probe = summary["usage_by_backend"][f"{specs(server.url)[provider]} (start-up probe)"]  # on its own line
    assert usage["calls"] + PROBE == run_summary["calls"] and probe["calls"] == PROBE
    assert usage["prompt_tokens"] > 0 and usage["cost_usd"] == 0


def test_over_http_the_game_matches_the_in_process_stand_in(tmp_path: Path, standin_server: Any) -> None:
    """The server answers with the same rule, so the recorded game is the in-process one."""
    server = standin_server(capacity=8)
    run(tmp_path / "http", specs(server.url)["openai"], scenario=game(pairing="rounds"))
    run(tmp_path / "local", "stand-in", scenario=game(pairing="rounds"))
    assert recorded(tmp_path / "http") == recorded(tmp_path / "local")


FAULTS = ["429", "429_retry_after", "529", "overloaded", "500", "503", "timeout", "drip", "drop", "malformed",
          "unparseable"]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "tgi"])
@pytest.mark.parametrize("fault", FAULTS)
def test_every_fault_kind_leaves_the_run_complete(tmp_path: Path, standin_server: Any, provider: str, fault: str) -> None:
    server = standin_server(capacity=8, faults={fault: 0.3}, retry_after_s=0.05, timeout_hold_s=0.6, drip_interval_s=0.05,
                            seed=7)
    summary = run(tmp_path / "out", specs(server.url)[provider], scenario=game(max_rounds=2), timeout_s=0.25)
    assert_complete(tmp_path / "out", summary)
    assert server.stats.faults.get(fault, 0) > 0, "the fault was injected"
    (run_summary,) = summary["runs"]
    if fault == "unparseable":
        assert run_summary["invalid_replies"] > 0 and run_summary["reasks"] > 0
    else:
        assert run_summary["retries"] >= server.stats.faults[fault] > 0
        assert run_summary["fallbacks"] == 0


def test_retry_after_is_honoured_by_every_call(standin_server: Any) -> None:
    server = standin_server(capacity=8, faults={"429_retry_after": 1.0}, retry_after_s=0.5)
    arrivals: list[float] = []
    original = server.server._serve

    async def recording(*args: Any) -> Any:
        arrivals.append(time.monotonic())
        return await original(*args)

    server.server._serve = recording
    situation = _situation()
    inner = OpenAIModel(name="openai:x", model="x", api_key="k", base_url=server.url + "/v1")
    model = RetryingModel(LimitedModel(inner, Limits(max_in_flight=4)), QUICK_RETRY)

    async def scenario() -> None:
        calls = [asyncio.ensure_future(model.complete(_request(situation, seed))) for seed in range(4)]
        while len(arrivals) < 4:  # the four calls go out at once, and all are refused
            await asyncio.sleep(0.005)
        refused_at = arrivals[3]
        await asyncio.sleep(0.1)
        server.faults({})
        await asyncio.gather(*calls)
        await model.aclose()
        later = arrivals[4:]
        assert len(later) >= 4 and min(later) - refused_at >= 0.45, "a call went out before the Retry-After had passed"

    asyncio.run(scenario())


def test_the_in_flight_cap_is_never_exceeded(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=32, service_time_s=0.01)
    summary = run(tmp_path / "out", specs(server.url)["openai"], scenario=game(agents=16, max_in_flight=8),
                  limits=Limits(max_in_flight=3))
    assert_complete(tmp_path / "out", summary)
    assert server.stats.max_active == 3, "the server saw more (or fewer) calls at once than the cap"
    assert summary["limiter_by_backend"][specs(server.url)["openai"]]["max_in_flight_seen"] == 3


def test_the_adaptive_limiter_shrinks_under_overload_and_recovers(standin_server: Any) -> None:
    server = standin_server(capacity=64, service_time_s=0.005)
    inner = OpenAIModel(name="openai:x", model="x", api_key="k", base_url=server.url + "/v1")
    # The refusal rules alone: with 5 ms calls this host's own CPU time per call is a large part of
    # the latency, which the latency rule would rightly read as a queue (tests/test_limiter_latency.py).
    limiter = LimitedModel(inner, Limits(max_in_flight=16, queueing_tolerance=None))
    model = RetryingModel(limiter, QUICK_RETRY)
    situation = _situation()

    async def batch(count: int, start: int) -> None:
        await asyncio.gather(*(model.complete(_request(situation, seed)) for seed in range(start, start + count)))

    async def scenario() -> None:
        server.faults({"529": 0.5})
        await batch(80, 0)
        shrunk = min(limit for _, limit in limiter.trajectory)
        assert shrunk <= 16 * 0.75 ** 2, f"the cap did not shrink under 529s (lowest {shrunk})"
        server.faults({})
        await batch(80, 1000)
        assert limiter.limit == 16, "the cap did not grow back once calls succeeded"
        # Random 429s at 20% (a hosted API's background rate) must not collapse the cap.
        server.faults({"429": 0.2})
        await batch(160, 5000)
        assert limiter.limit >= 12 and min(limit for _, limit in limiter.trajectory[-50:]) >= 8
        await model.aclose()

    asyncio.run(scenario())


def test_a_rerun_comes_from_the_cache_with_no_request(tmp_path: Path, standin_server: Any) -> None:
    """A run is a function of its seed and its answers, so a rerun asks nothing new."""
    server = standin_server(capacity=8)
    cache = tmp_path / "cache.db"
    first = run(tmp_path / "first", specs(server.url)["tgi"], cache_path=cache, scenario=game(pairing="rounds"))
    asked = server.stats.requests
    assert asked > 0
    second = run(tmp_path / "second", specs(server.url)["tgi"], cache_path=cache, scenario=game(pairing="rounds"))
    assert server.stats.requests == asked, "a rerun with the same seeds reached the server"
    assert recorded(tmp_path / "first") == recorded(tmp_path / "second")
    # (the first run's calls count its start-up probe; the rerun sends nothing, so no probe either)
    assert second["runs"][0]["cache_hits"] == second["runs"][0]["calls"] == first["runs"][0]["calls"] - PROBE
    # Another seed is another question: it asks the server.
    run(tmp_path / "third", specs(server.url)["tgi"], cache_path=cache, seed=4, scenario=game(pairing="rounds"))
    assert server.stats.requests > asked


def _situation() -> NamingSituation:
    names = NamingGame().for_experiment(0).names
    return NamingSituation(names, ((names[0], names[1], -50),))


def _request(situation: NamingSituation, seed: int) -> Request:
    scenario = NamingGame().for_experiment(0)
    return Request(messages=scenario.codec.messages(situation), sampling=scenario.params.sampling(), seed=seed,
                   options=situation.options)


def test_replay_answers_a_recorded_experiment_from_the_cache_alone(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8)
    cache = tmp_path / "cache.db"
    run(tmp_path / "recorded", specs(server.url)["openai"], cache_path=cache, scenario=game(pairing="rounds"))
    asked = server.stats.requests
    run(tmp_path / "replayed", specs(server.url)["openai"], cache_path=cache, scenario=game(pairing="rounds"), replay=True)
    assert server.stats.requests == asked
    assert recorded(tmp_path / "recorded") == recorded(tmp_path / "replayed")
    with pytest.raises(ReplayMissError):
        run(tmp_path / "other", specs(server.url)["openai"], cache_path=cache, scenario=game(pairing="rounds"),
            replay=True, seed=99)
    assert server.stats.requests == asked
    (failed,) = Store(tmp_path / "other").runs()
    assert failed["status"] == "failed", "the run stopped by the miss is recorded as such"


def test_max_calls_is_hard_and_resume_with_a_higher_budget_continues_exactly(tmp_path: Path,
                                                                             standin_server: Any) -> None:
    server = standin_server(capacity=8)
    out = tmp_path / "out"
    scenario = game(max_rounds=6, max_in_flight=4)
    with pytest.raises(BudgetExhausted, match="--max-calls 10 reached"):
        run(out, specs(server.url)["tgi"], scenario=scenario, max_calls=10, cache=False)
    assert server.stats.requests <= 10, "a request past the budget was sent"
    summary = json.loads((out / "summary.json").read_text())
    (run_summary,) = summary["runs"]
    assert run_summary["status"] == "stopped" and run_summary["stop_reason"] == "max_calls"
    assert summary["budget"]["stopped_by"] == "max_calls" and summary["budget"]["calls"] == 10
    assert [(row["status"], row["stop_reason"]) for row in Store(out).runs()] == [("stopped", "max_calls")]
    # The budget is the experiment's: --resume with a higher one continues where it stopped,
    # and the result is the uninterrupted run's.
    run(out, specs(server.url)["tgi"], scenario=scenario, max_calls=10_000, cache=False, resume=True)
    run(tmp_path / "whole", specs(server.url)["tgi"], scenario=scenario, cache=False)
    assert recorded(out) == recorded(tmp_path / "whole")
    assert json.loads((out / "summary.json").read_text())["runs"][0]["status"] == "done"


def test_max_cost_stops_the_run_from_the_price_table(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8)
    register_price("priced-model", 1000.0, 1000.0)  # dollars per million tokens: a call costs about 0.28
    with pytest.raises(BudgetExhausted, match="--max-cost 2 reached"):
        run(tmp_path / "out", f"openai:priced-model@{server.url}/v1", scenario=game(max_rounds=50, max_in_flight=2),
            max_cost_usd=2.0)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (run_summary,) = summary["runs"]
    assert run_summary["stop_reason"] == "max_cost" and run_summary["status"] == "stopped"
    assert 0.5 < run_summary["cost_usd"] <= 2.0, "no request that could pass the budget was sent"
    spec = f"openai:priced-model@{server.url}/v1"  # the agents' calls and the start-up probe's, each on its line
    assert summary["usage_by_backend"][spec]["cost_usd"] + summary["usage_by_backend"][f"{spec} (start-up probe)"][
        "cost_usd"] == pytest.approx(run_summary["cost_usd"], abs=2e-6)


@pytest.mark.parametrize("provider", ["openai", "openai-lean", "anthropic", "tgi"])
def test_timeout_covers_a_body_dripped_a_byte_at_a_time(standin_server: Any, provider: str) -> None:
    """The whole answer must arrive within --timeout: the SDKs' own timeouts bound each read,
    so a body dripped a byte every 50 ms (a few hundred bytes: over ten seconds) never ended
    by them."""
    from agentsim.llm.anthropic_backend import AnthropicModel
    from agentsim.llm.tgi import TGIModel

    server = standin_server(capacity=4, faults={"drip": 1.0}, drip_interval_s=0.05)
    backend = {"openai": lambda: OpenAIModel(name="openai:x", model="x", api_key="k", base_url=server.url + "/v1",
                                             timeout_s=0.5),
               "openai-lean": lambda: OpenAIHTTPModel(name="openai:x", model="x", api_key="k",
                                                      base_url=server.url + "/v1", timeout_s=0.5),
               "anthropic": lambda: AnthropicModel(name="anthropic:x", model="x", api_key="k", base_url=server.url,
                                                   timeout_s=0.5),
               "tgi": lambda: TGIModel(name="tgi:x", url=server.url, timeout_s=0.5)}[provider]()

    async def ask() -> BaseException | None:
        try:
            await backend.complete(_request(_situation(), 1))
        except BackendError as error:
            return error
        finally:
            await backend.aclose()
        return None

    error = asyncio.run(ask())
    assert isinstance(error, BackendError) and error.kind == "timeout", error


def test_the_anthropic_backend_sends_its_key_once(standin_server: Any) -> None:
    from agentsim.llm.anthropic_backend import AnthropicModel

    server = standin_server(capacity=4, api_key="sk-ant-secret")
    backend = AnthropicModel(name="anthropic:x", model="x", api_key="sk-ant-secret", base_url=server.url)

    async def ask() -> None:
        try:
            await backend.complete(_request(_situation(), 1))
        finally:
            await backend.aclose()

    asyncio.run(ask())
    assert server.stats.auth_headers == {"x-api-key": 1}, "the key went as a bearer token too"
