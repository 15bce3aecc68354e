"""The local backend (transformers + torch in process) on a tiny randomly initialised Llama
and a character-level tokenizer, both built here: no download, no weights from anywhere."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import string
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers import Quiet  # noqa: E402

from agentsim.errors import UnfitModelError  # noqa: E402
from agentsim.games.naming import NamingGame, NamingSituation  # noqa: E402
from agentsim.llm.base import Request, Sampling  # noqa: E402
from agentsim.llm.health import HealthPolicy  # noqa: E402
from agentsim.llm.local import LocalModel  # noqa: E402
from agentsim.llm.specs import BackendOptions  # noqa: E402
from agentsim.llm.stack import layer  # noqa: E402
from agentsim.runner import Experiment, ExperimentConfig  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, decoders, models
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    directory = tmp_path_factory.mktemp("tiny-llama")
    specials = ["<pad>", "<eos>", "<unk>"]
    vocabulary = {token: index for index, token in enumerate(specials + list(string.printable))}
    core = Tokenizer(models.BPE(vocab=vocabulary, merges=[], unk_token="<unk>"))
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    tokenizer.save_pretrained(directory)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(vocabulary), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         pad_token_id=0, eos_token_id=1, bos_token_id=1)
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


def test_a_model_whose_replies_cannot_be_read_is_refused_before_the_run(tmp_path: Path, tiny_model: Path) -> None:
    """A random model names no option: its run would be fallbacks, so it stops at start-up with
    the advice (agentsim/model_fitness.py), and no run is recorded."""
    spec = f"local:{tiny_model}"
    scenario = NamingGame(agents=6, max_rounds=2, stop_at="none")
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=tmp_path / "out", backend=spec, seed=1,
                                             llm=BackendOptions(cache_path=tmp_path / "cache.db")), Quiet())
    experiment.open()
    with pytest.raises(UnfitModelError, match=r"readable answer to [0-3] of 8 .* --set constrained_decoding=true; "
                                              r"check the model with python -m agentsim check-model"):
        asyncio.run(experiment.run())
    connection = sqlite3.connect(tmp_path / "out" / "agentsim.db")
    assert connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    assert connection.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 0


def test_a_naming_game_runs_on_a_tiny_local_model_in_batches(tmp_path: Path, tiny_model: Path) -> None:
    spec = f"local:{tiny_model}"
    scenario = NamingGame(agents=6, max_rounds=2, stop_at="none", max_in_flight=3, max_reasks=1)
    # A random model's replies are mostly unreadable: the start-up check (as above) and the fallback
    # breaker are off to see them recorded.
    llm = BackendOptions(cache_path=tmp_path / "cache.db", model_check=False, health=HealthPolicy(max_fallback_share=1))
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=tmp_path / "out", backend=spec, seed=1, llm=llm),
                            Quiet())
    experiment.open()
    local = layer(experiment.backends[spec], LocalModel)
    assert isinstance(local, LocalModel)
    asyncio.run(experiment.run())
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (run,) = summary["runs"]
    assert run["status"] == "done" and run["interactions"] == 6
    assert run["calls"] == sum(local.batches) > 0 and max(local.batches) > 1, "waiting requests share a forward pass"
    # A random model's replies rarely name an option: re-asked, then a fallback, every call recorded.
    connection = sqlite3.connect(tmp_path / "out" / "agentsim.db")
    assert connection.execute("SELECT COUNT(*) FROM calls WHERE reply IS NOT NULL").fetchone()[0] == run["calls"]
    assert connection.execute("SELECT COUNT(*) FROM moves").fetchone()[0] == 12
    assert run["reasks"] == run["invalid_replies"] - run["fallbacks"]
    assert summary["usage_by_backend"][spec]["completion_tokens"] > 0


def test_same_seed_same_answer_and_no_option_probabilities(tiny_model: Path) -> None:
    model = LocalModel(name="local:tiny", path=str(tiny_model))
    game = NamingGame().for_experiment(0)
    situation = NamingSituation(game.names, ())
    sampling = Sampling(temperature=0.7, top_k=10, max_tokens=4)

    def request(seed: int) -> Request:
        return Request(messages=game.messages(situation), sampling=sampling, seed=seed, options=situation.options)

    async def ask() -> list[Any]:
        answers = await asyncio.gather(*(model.complete(request(seed)) for seed in (1, 1, 2)))
        forced = await model.complete(Request(messages=(game.messages(situation)[0],), seed=3, options=("A", "B"),
                                              sampling=Sampling(temperature=0.0, max_tokens=1)))
        await model.aclose()
        return [*answers, forced]

    first, again, _, forced = asyncio.run(ask())
    assert first.text == again.text and first.completion_tokens == again.completion_tokens
    assert model.batches[0] == 3
    # No constrained decoding here: free text has no exact chance per option, so none is reported.
    assert first.option_probabilities is None and forced.option_probabilities is None


def test_a_choice_grammar_holds_the_replies_and_scores_each_options_exact_chance(tiny_model: Path) -> None:
    """transformers in process: the game's choice of replies is enforced token by token, and
    the stored distribution is the sampler's chance of each reply: the answers of 200 seeds
    agree with it (exact binomial test at 0.1%)."""
    from scipy import stats

    from agentsim.games.naming.fitness import naming_request

    model = LocalModel(name="local:tiny", path=str(tiny_model))
    game = NamingGame(names=("Q", "M"), constrained_decoding=True, temperature=1.0, top_k=None).for_experiment(0)
    situation = NamingSituation(("Q", "M"), ())

    async def ask() -> list[Any]:
        answers = await asyncio.gather(*(model.complete(naming_request(game, situation, seed)) for seed in range(200)))
        await model.aclose()
        return list(answers)

    answers = asyncio.run(ask())
    assert {answer.text for answer in answers} <= {"{'value': Q;", "{'value': M;"}
    distribution = answers[0].option_probabilities
    assert distribution is not None and all(answer.option_probabilities == pytest.approx(distribution) for answer in answers)
    assert sum(distribution.values()) == pytest.approx(1.0, abs=max(answers[0].unscored, 1e-9))
    chose_q = sum(answer.text == "{'value': Q;" for answer in answers)
    assert stats.binomtest(chose_q, len(answers), distribution["Q"]).pvalue > 0.001, (chose_q, distribution)


def test_closing_waits_for_the_batch_inside_the_model_and_fails_the_calls_still_waiting(tiny_model: Path) -> None:
    """A worker thread inside the model cannot be stopped: closing (Ctrl-C, SIGTERM, the
    breaker) returns only after it has left, and a call that never reached the model fails
    instead of waiting for ever."""
    import threading

    from agentsim.errors import BackendError

    model = LocalModel(name="local:tiny", path=str(tiny_model), max_batch=1)
    entered, release, left = threading.Event(), threading.Event(), threading.Event()
    generate = model._generate

    def held(requests: list[Request]) -> list[Any]:
        entered.set()
        release.wait(60)
        try:
            return generate(requests)
        finally:
            left.set()

    model._generate = held  # type: ignore[method-assign]
    game = NamingGame().for_experiment(0)
    situation = NamingSituation(game.names, ())
    request = Request(messages=game.messages(situation), sampling=Sampling(max_tokens=2), seed=1, options=game.names)

    async def scenario() -> None:
        inside = asyncio.ensure_future(model.complete(request))
        waiting = asyncio.ensure_future(model.complete(request))  # the next batch (max_batch 1)
        await asyncio.to_thread(entered.wait, 60)
        closing = asyncio.ensure_future(model.aclose())
        for _ in range(50):
            await asyncio.sleep(0)
        assert not closing.done() and not left.is_set(), "closing waits while the thread is inside the model"
        release.set()
        await closing
        assert left.is_set()
        for call in (inside, waiting):
            with pytest.raises(BackendError, match="closed"):
                await call

    asyncio.run(scenario())
