"""The choice-distribution cache (llm/choices.py, `--sample-locally`): a known prompt is
answered by a seeded draw from its stored option distribution; the critical-mass search makes
ten times fewer calls with it and finds the same flip probabilities."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path
from typing import Any

import pytest
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.analysis.critical_mass import CriticalMassSearch, search_both
from agentsim.analysis.stats import proportion_interval
from agentsim.games.naming import NamingGame
from agentsim.llm.base import Completion, Message, Request, Sampling
from agentsim.llm.cache import ResponseStore
from agentsim.llm.choices import ChoiceDistributionModel, draw
from agentsim.llm.specs import BackendOptions
from agentsim.store import Store


class Scripted:
    """A model whose reply names the option its seed picks, with a fixed distribution."""

    name = "scripted"
    immediate = False

    def __init__(self, distribution: dict[str, float]) -> None:
        self.distribution = distribution
        self.calls = 0

    async def complete(self, request: Request) -> Completion:
        self.calls += 1
        option = draw(self.distribution, (request.seed or 0) + 1)  # not the wrapper's own draw
        return Completion(text=f"{{'value': {option}; 'reason': 'x'}}", prompt_tokens=50, completion_tokens=6,
                          model="scripted", option_probabilities=dict(self.distribution))

    async def aclose(self) -> None:
        return None


def _request(seed: int, text: str = "pick Q or M") -> Request:
    return Request(messages=(Message("system", text),), sampling=Sampling(temperature=0.5), seed=seed, options=("Q", "M"))


def test_a_known_prompt_is_drawn_from_its_distribution_by_the_seed_without_a_call(tmp_path: Path) -> None:
    inner = Scripted({"Q": 0.3, "M": 0.7})
    store = ResponseStore(tmp_path / "cache.db")
    model = ChoiceDistributionModel(inner, store, provider="p", endpoint="e", model="m", sample_locally=True)

    async def ask() -> list[Completion]:
        return [await model.complete(_request(seed)) for seed in range(2000)]

    answers = asyncio.run(ask())
    assert inner.calls == 1 and model.sampled == 1999
    assert answers[0].sampled_locally is False and all(answer.sampled_locally for answer in answers[1:])
    assert all(answer.text.startswith("{'value': ") for answer in answers)
    counts = collections.Counter(answer.text.removeprefix("{'value': ") for answer in answers)
    assert 0.65 < counts["M"] / len(answers) < 0.75, "the draws follow the stored distribution"
    again = asyncio.run(model.complete(_request(7)))
    assert again.text == answers[7].text, "the call's seed decides the draw"
    assert sum(again.option_probabilities.values()) == pytest.approx(1)
    other = asyncio.run(model.complete(_request(7, "another prompt")))
    assert inner.calls == 2 and not other.sampled_locally, "another prompt is asked"
    store.close()


def test_without_sample_locally_the_model_answers_every_time(tmp_path: Path) -> None:
    inner = Scripted({"Q": 0.5, "M": 0.5})
    model = ChoiceDistributionModel(inner, ResponseStore(tmp_path / "cache.db"), provider="p", endpoint="e", model="m")
    replies = [asyncio.run(model.complete(_request(seed))).text for seed in range(20)]
    assert inner.calls == 20 and model.stored == 1 and model.sampled == 0
    assert replies == [f"{{'value': {draw(inner.distribution, seed + 1)}; 'reason': 'x'}}" for seed in range(20)]


def _search(server_url: str, cache: Path, out: Path, sample_locally: bool) -> dict[tuple[str, int], tuple[int, int]]:
    """The whole critical-mass search (both conventions, 10 runs per size): flips and runs by size tried."""
    scenario = NamingGame(agents=24, names=("Q", "M"), memory_length=5, max_rounds=30)
    search = CriticalMassSearch(scenario=scenario, majority="M", alternative="Q", runs=10,
                                backend=f"openai:standin@{server_url}/v1",
                                llm=BackendOptions(cache_path=cache, sample_locally=sample_locally))
    return {(result.majority, size): (tried["flips"], tried["runs"])
            for result in search_both(search, out) for size, tried in result.tried.items()}


@pytest.mark.slow
@pytest.mark.timeout(600)  # 45 s on two free cores; a shared, loaded host can take several times that
def test_the_critical_mass_search_makes_ten_times_fewer_calls_and_finds_the_same_flips(
        tmp_path: Path, standin_server: Any) -> None:
    """Against the stand-in server reporting its rule's exact choice distributions as logprobs
    (README, "Sampling known prompts locally")."""
    server = standin_server(capacity=32, bias_name="M", bias=0.5, noise=0.1)
    plain = _search(server.url, tmp_path / "plain.db", tmp_path / "plain", False)
    asked = server.stats.requests
    server.reset()
    drawn = _search(server.url, tmp_path / "local.db", tmp_path / "local", True)
    assert asked >= 10 * server.stats.requests, f"{asked} calls, then {server.stats.requests} with --sample-locally"
    shared = sorted(set(plain) & set(drawn))
    assert len(shared) >= 6
    for key in shared:  # each share within the other's 95% interval (10 runs: 9/10 and 10/10 agree)
        (plain_flips, plain_runs), (drawn_flips, drawn_runs) = plain[key], drawn[key]
        plain_low, plain_high = proportion_interval(plain_flips, plain_runs)
        drawn_low, drawn_high = proportion_interval(drawn_flips, drawn_runs)
        assert plain_low <= drawn_flips / drawn_runs <= plain_high or drawn_low <= plain_flips / plain_runs <= drawn_high, \
            f"flips against {key[0]} with {key[1]} committed: {plain[key]}, then {drawn[key]}"
    store = Store(tmp_path / "local" / "M_to_Q" / "committed_012")
    sampled = next(iter(store.rows("SELECT COUNT(*) FROM decisions WHERE sampled_locally = 1")))[0]
    store.close()
    assert sampled > 0, "the store records which decisions were drawn locally"
