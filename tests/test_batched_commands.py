"""`comprehension --batch` and `check-model --batch`: their independent questions through OpenAI's
Batch API and Anthropic's Message Batches first (one batch), then answered from the response
cache, with the real SDKs against the stand-in server speaking both protocols. The stand-in
server answers every prompt with its naming rule (a comprehension question gets a name, mostly
scored wrong): what is compared is that the batched command gets the same replies and report as
the interactive one, at half the cost the command reports."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import cli_in_process
from servers import standin_server  # noqa: F401 (a fixture)

from agentsim.errors import BackendSpecError

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
PROBE_USD = 2e-5  # what the interactive command's start-up probe (a few tokens, and the chat format's) may cost at most
PREFERENCE_REQUESTS = 24 * 2  # check-model's preference questions in the mode it does not use (seeds x names)


def _backend(provider: str, url: str) -> str:
    return f"openai:{MODELS['openai']}@{url}/v1" if provider == "openai" else f"anthropic:{MODELS['anthropic']}@{url}"


def _naming_run(directory: Path) -> Path:
    result = cli_in_process(str(ROOT / "scenarios" / "naming_game.py"), "--set", "agents=6", "--set", "max_rounds=4",
                            "--runs", "1", "--no-live", "--backend", "stand-in", "--out", str(directory))
    assert result.returncode == 0, result.stderr
    return directory


def _comprehension(run: Path, backend: str, *flags: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    result = cli_in_process("comprehension", str(run), "--agents", "3", "--max-states", "8", "--backend", backend, *flags)
    assert result.returncode == 0, result.stderr
    document = json.loads((run / "analysis" / "comprehension.json").read_text())
    with (run / "analysis" / "comprehension_questions.csv").open(encoding="utf-8") as file:
        return document, list(csv.DictReader(file))


def _cached(path: Path) -> dict[str, dict[str, Any]]:
    with sqlite3.connect(path) as connection:
        return {key: json.loads(value) for key, value in connection.execute("SELECT key, value FROM responses")}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batched_comprehension_answers_as_interactive_calls_at_half_the_cost(
        tmp_path: Path, standin_server: Any, provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    server = standin_server(capacity=16)
    backend = _backend(provider, server.url)
    run = _naming_run(tmp_path / "run")
    monkeypatch.setenv("AGENTSIM_CACHE", str(tmp_path / "interactive.db"))
    interactive, asked = _comprehension(run, backend)
    before = server.stats.requests
    monkeypatch.setenv("AGENTSIM_CACHE", str(tmp_path / "batched.db"))
    batched, answered = _comprehension(run, backend, "--batch", "--batch-poll", "0.05")
    questions = interactive["questions"]
    assert questions > 20 and answered == asked and batched["accuracy"] == interactive["accuracy"]
    assert server.stats.batches_created == 1 and server.stats.batch_requests == questions
    assert server.stats.requests == before  # no question was asked alone (nor the start-up probe)
    assert interactive["spent"]["calls"] == questions + 1 and batched["spent"]["calls"] == questions  # (+1: the probe)
    paid, half = batched["spent"]["cost_usd"], interactive["spent"]["cost_usd"] / 2
    assert paid > 0 and half - PROBE_USD / 2 <= paid <= half


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batched_check_model_gives_the_interactive_report_at_half_price(
        tmp_path: Path, standin_server: Any, provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    server = standin_server(capacity=16)
    backend = _backend(provider, server.url)
    reports = {}
    for mode, flags in (("interactive", ()), ("batched", ("--batch", "--batch-poll", "0.05"))):
        monkeypatch.setenv("AGENTSIM_CACHE", str(tmp_path / f"{mode}.db"))
        before = server.stats.requests
        result = cli_in_process("check-model", "--backend", backend, "--seeds", "10", "--out", str(tmp_path / f"{mode}.json"),
                                *flags)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[-2].startswith("spent: ")
        reports[mode] = json.loads((tmp_path / f"{mode}.json").read_text())
        asked_alone = server.stats.requests - before
    assert asked_alone == 0 and server.stats.batches_created == 1  # the batched run: every request in one batch
    interactive, batched = reports["interactive"], reports["batched"]
    spent = interactive.pop("spent"), batched.pop("spent")
    assert batched == interactive  # readable shares, preferences, calibration, comprehension, verdict
    calls = spent[0]["calls"] - 1  # less the interactive command's start-up probe
    assert server.stats.batch_requests == spent[1]["calls"] == calls + PREFERENCE_REQUESTS
    # The batch's extra answers (the unused mode's preference) are the ones never served: still marked as a
    # batch's answer in the cache, with what they cost. Less those, the batch cost half the interactive calls.
    asked, answered = _cached(tmp_path / "interactive.db"), _cached(tmp_path / "batched.db")
    unused = {key: value["batch_cost_usd"] for key, value in answered.items() if "batch_cost_usd" in value}
    assert len(asked) == calls and set(answered) - set(asked) == set(unused) and len(unused) == PREFERENCE_REQUESTS
    shared, half = spent[1]["cost_usd"] - sum(unused.values()), spent[0]["cost_usd"] / 2
    assert shared > 0 and half - PROBE_USD / 2 - 2e-6 <= shared <= half + 2e-6  # (6 decimals kept)


def test_a_comprehension_killed_while_waiting_polls_its_recorded_batch(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=16, batch_polls=10**9)  # the batch never ends while the first process waits
    run = _naming_run(tmp_path / "run")
    environment = {"AGENTSIM_CACHE": str(tmp_path / "cache.db")}
    command = [sys.executable, "-m", "agentsim", "comprehension", str(run), "--agents", "3", "--max-states", "8",
               "--backend", _backend("anthropic", server.url), "--batch", "--batch-poll", "0.05"]
    process = subprocess.Popen(command, env={**os.environ, **environment}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while server.stats.batches_created == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # polling
    process.kill()
    process.wait(10)
    assert server.stats.batches_created == 1
    server.server.config.batch_polls = 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTSIM_CACHE", environment["AGENTSIM_CACHE"])
        document, _ = _comprehension(run, _backend("anthropic", server.url), "--batch", "--batch-poll", "0.05")
    assert server.stats.batches_created == 1 and server.stats.batch_requests == document["questions"]
    assert server.stats.requests == 0 and document["spent"]["calls"] == 0  # the first process reserved and paid it


@pytest.mark.parametrize("arguments", [
    ("comprehension", "RUN", "--backend", "stand-in"),
    ("comprehension", "RUN"),  # the run's own backend: the stand-in
    ("check-model", "--backend", "tgi:m@http://127.0.0.1:9"),
])
def test_batch_is_refused_where_it_cannot_apply(tmp_path: Path, arguments: tuple[str, ...]) -> None:
    run = _naming_run(tmp_path / "run") if "RUN" in arguments else tmp_path
    result = cli_in_process(*(str(run) if argument == "RUN" else argument for argument in arguments), "--batch")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "openai: or anthropic:" in line, line


def test_a_stack_without_the_response_cache_is_refused() -> None:
    from agentsim.batch_run import prefetch_into
    from agentsim.games.naming import NamingGame
    from agentsim.llm.specs import BackendOptions, build_backend

    stack = build_backend("anthropic:claude-3-5-haiku-latest@http://127.0.0.1:9", BackendOptions(cache=False),
                          rules=NamingGame().standin_part().rules)
    with pytest.raises(BackendSpecError, match="drop --no-cache"):
        asyncio.run(prefetch_into(stack, [], poll_s=1.0, attempts=1, progress=print))
