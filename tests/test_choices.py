"""The choice-distribution cache (llm/choices.py, `--sample-locally`): a known prompt is
answered by a seeded draw from its stored exact option distribution; a backend or a scenario
that has no exact distributions is refused with one line. The same random process as asking
the model is shown here on backends whose distributions are exact by construction (a scripted
model, the stand-in's rule); on SmolLM2 by the calibration test (tests/test_smollm2.py)."""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT

from agentsim.analysis.stats import proportion_interval
from agentsim.games.naming import NamingGame, NamingSituation
from agentsim.games.naming.critical_mass import CriticalMassSearch, search_both
from agentsim.llm import providers, specs
from agentsim.llm.base import Completion, Grammar, Message, Request, Sampling
from agentsim.llm.cache import ResponseStore
from agentsim.llm.choices import ChoiceDistributionModel, draw
from agentsim.llm.specs import BackendOptions
from agentsim.store import Store

GRAMMAR = Grammar.choice({"Q": "{'value': Q;", "M": "{'value': M;"})


class Scripted:
    """A model that scores exactly: it answers the option its seed picks from a fixed
    distribution, and reports that distribution."""

    name = "scripted"
    immediate = False
    scores_options = True

    def __init__(self, distribution: dict[str, float]) -> None:
        self.distribution = distribution
        self.calls = 0

    async def complete(self, request: Request) -> Completion:
        self.calls += 1
        option = draw(self.distribution, (request.seed or 0) + 1)  # not the wrapper's own draw
        return Completion(text=f"{{'value': {option};", prompt_tokens=50, completion_tokens=6, model="scripted",
                          option_probabilities=dict(self.distribution), unscored=1e-6)

    async def aclose(self) -> None:
        return None


def _request(seed: int, text: str = "pick Q or M") -> Request:
    return Request(messages=(Message("system", text),), sampling=Sampling(temperature=0.5), seed=seed, options=("Q", "M"),
                   grammar=GRAMMAR)


def test_a_known_prompt_is_drawn_from_its_distribution_by_the_seed_without_a_call(tmp_path: Path) -> None:
    inner = Scripted({"Q": 0.3, "M": 0.7})
    store = ResponseStore(tmp_path / "cache.db")
    model = ChoiceDistributionModel(inner, store, provider="p", endpoint="e", model="m", sample_locally=True)

    async def ask() -> list[Completion]:
        return [await model.complete(_request(seed)) for seed in range(2000)]

    answers = asyncio.run(ask())
    assert inner.calls == 1 and model.sampled == 1999
    assert answers[0].sampled_locally is False and all(answer.sampled_locally for answer in answers[1:])
    assert {answer.text for answer in answers} == {"{'value': Q;", "{'value': M;"}, "the grammar's replies"
    counts = collections.Counter(answer.text for answer in answers)
    assert 0.65 < counts["{'value': M;"] / len(answers) < 0.75, "the draws follow the stored distribution"
    again = asyncio.run(model.complete(_request(7)))
    assert again.text == answers[7].text, "the call's seed decides the draw"
    assert sum(again.option_probabilities.values()) == pytest.approx(1) and again.unscored == 1e-6
    other = asyncio.run(model.complete(_request(7, "another prompt")))
    assert inner.calls == 2 and not other.sampled_locally, "another prompt is asked"
    store.close()


def test_without_sample_locally_the_model_answers_every_time(tmp_path: Path) -> None:
    inner = Scripted({"Q": 0.5, "M": 0.5})
    model = ChoiceDistributionModel(inner, ResponseStore(tmp_path / "cache.db"), provider="p", endpoint="e", model="m")
    replies = [asyncio.run(model.complete(_request(seed))).text for seed in range(20)]
    assert inner.calls == 20 and model.stored == 1 and model.sampled == 0
    assert replies == [f"{{'value': {draw(inner.distribution, seed + 1)};" for seed in range(20)]


def test_nothing_is_stored_from_a_reply_without_a_choice_grammar(tmp_path: Path) -> None:
    inner = Scripted({"Q": 0.5, "M": 0.5})
    model = ChoiceDistributionModel(inner, ResponseStore(tmp_path / "cache.db"), provider="p", endpoint="e", model="m",
                                    sample_locally=True)
    free = Request(messages=(Message("system", "pick"),), sampling=Sampling(), seed=1, options=("Q", "M"))
    for seed in range(3):
        asyncio.run(model.complete(free.with_turns(seed=seed)))
    assert inner.calls == 3 and model.stored == 0 and model.sampled == 0


def _agentsim(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentsim", str(ROOT / "scenarios" / "critical_mass.py"), "--no-live",
                           "--out", str(tmp_path / "out"), "--sample-locally", *arguments],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("arguments", "says"), [
    (("--set", "constrained_decoding=true", "--backend", "openai:smollm2@http://127.0.0.1:9/v1"),
     "backend 'openai:smollm2@http://127.0.0.1:9/v1' cannot score them (docs/backends.md); use local:smollm2, "
     "local:PATH.gguf (llama.cpp) or local:HF_ID_OR_PATH (transformers) in process with the answer grammar, "
     "or drop --sample-locally"),
    (("--set", "constrained_decoding=true"), "backend 'stand-in' cannot score them"),
    (("--backend", "local:smollm2"), "which exist only when the answer grammar holds each reply to a finite set; "
                                     "constrain its answers with the grammar: --set constrained_decoding=true"),
])
def test_sample_locally_refuses_with_one_line_where_no_exact_distribution_exists(
        tmp_path: Path, arguments: tuple[str, ...], says: str) -> None:
    result = _agentsim(tmp_path, *arguments)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("agentsim: error: --sample-locally draws ") and says in line
    assert not (tmp_path / "out").exists(), "refused before anything is recorded"


class ExactStandIn:
    """The stand-in's rule as a backend that scores: its reply is drawn from the rule's exact
    distribution with the call's seed, and it reports that distribution (stand-in figures)."""

    immediate = False
    scores_options = True

    def __init__(self, spec: specs.BackendSpec, scenario: Any) -> None:
        self.name = spec.text
        self.rule = scenario.standin_part().rules[0]
        self.replies = {option: reply for reply, option in scenario.grammar().choices}

    async def complete(self, request: Request) -> Completion:
        assert isinstance(request.situation, NamingSituation)
        distribution = self.rule.probabilities(request.situation)
        option = draw(distribution, (request.seed or 0) ^ 0x5EED)
        return Completion(text=self.replies[option], model="exact-standin", option_probabilities=distribution)

    async def aclose(self) -> None:
        return None


SEARCHED = NamingGame(agents=24, names=("Q", "M"), memory_length=5, max_rounds=30, constrained_decoding=True)


def _search(cache: Path, out: Path, sample_locally: bool) -> tuple[dict[tuple[str, int], tuple[int, int]], int]:
    """The whole critical-mass search (both conventions, 10 runs per size): flips and runs by
    size tried, and the calls that reached the backend."""
    search = CriticalMassSearch(scenario=SEARCHED, majority="M", alternative="Q", runs=10, backend="exact:standin",
                                llm=BackendOptions(cache_path=cache, sample_locally=sample_locally))
    tried = {(result.majority, size): (runs["flips"], runs["runs"])
             for result in search_both(search, out) for size, runs in result.tried.items()}
    calls = 0
    for directory in sorted(out.rglob("agentsim.db")):
        store = Store(directory.parent)
        calls += sum(1 for _ in store.rows("SELECT 1 FROM decisions WHERE reply IS NOT NULL AND sampled_locally IS NULL"))
        store.close()
    return tried, calls


@pytest.mark.slow
@pytest.mark.timeout(900)  # about a minute on two free cores; a shared, loaded host can take several times that
def test_the_critical_mass_search_asks_far_less_and_finds_the_same_flips(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A provider's factory gets its spec and options, never a scenario: this one is told the searched game's rule.
    monkeypatch.setitem(providers.TABLE, "exact", providers.Provider(
        name="exact", summary="the searched game's rule, scoring exactly",
        build=lambda spec, options: ExactStandIn(spec, SEARCHED)))
    plain, asked = _search(tmp_path / "plain.db", tmp_path / "plain", False)
    drawn, asked_drawn = _search(tmp_path / "local.db", tmp_path / "local", True)
    assert asked >= 10 * asked_drawn, f"{asked} calls, then {asked_drawn} with --sample-locally"
    shared = sorted(set(plain) & set(drawn))
    assert len(shared) >= 6
    for key in shared:  # each share within the other's 95% interval (10 runs: 9/10 and 10/10 agree)
        (plain_flips, plain_runs), (drawn_flips, drawn_runs) = plain[key], drawn[key]
        plain_low, plain_high = proportion_interval(plain_flips, plain_runs)
        drawn_low, drawn_high = proportion_interval(drawn_flips, drawn_runs)
        assert plain_low <= drawn_flips / drawn_runs <= plain_high or drawn_low <= plain_flips / plain_runs <= drawn_high, \
            f"flips against {key[0]} with {key[1]} committed: {plain[key]}, then {drawn[key]}"


def test_identical_prompts_in_flight_ask_the_model_once(tmp_path: Path) -> None:
    """With --sample-locally, a prompt asked again while its distribution is on its way waits
    for it (at the start of a run in consensus, every encounter in flight asks one prompt):
    one call, and every answer the seeded draw the plain path gives."""

    class Slow(Scripted):
        async def complete(self, request: Request) -> Completion:
            await asyncio.sleep(0.01)
            return await super().complete(request)

    def answers(sample_locally: bool, together: bool) -> tuple[list[str], int]:
        inner = Slow({"Q": 0.4, "M": 0.6})
        store = ResponseStore(tmp_path / f"cache-{sample_locally}-{together}.db")
        model = ChoiceDistributionModel(inner, store, provider="p", endpoint="e", model="m", sample_locally=sample_locally)

        async def ask() -> list[Completion]:
            if together:
                return list(await asyncio.gather(*(model.complete(_request(seed)) for seed in range(64))))
            return [await model.complete(_request(seed)) for seed in range(64)]

        texts = [answer.text for answer in asyncio.run(ask())]
        store.close()
        return texts, inner.calls

    in_flight, calls = answers(sample_locally=True, together=True)
    one_by_one, _ = answers(sample_locally=True, together=False)
    assert calls == 1 and in_flight == one_by_one
    _, plain_calls = answers(sample_locally=False, together=True)
    assert plain_calls == 64  # without --sample-locally every call is the model's own
