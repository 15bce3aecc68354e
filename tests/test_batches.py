"""`--batch`: independent calls through OpenAI's Batch API and Anthropic's Message Batches, with
the real SDKs against the stand-in server speaking both protocols: the same answers as
interactive calls at half the recorded cost, expiry, partial failures and cancellation by the
provider, and a kill -9 while waiting that resumes without submitting twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, cli_in_process
from servers import standin_server  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parent.parent
PROBE = str(ROOT / "scenarios" / "individual_bias.py")
SMALL = ("--set", "agents=6", "--set", "max_rounds=4", "--runs", "1", "--no-live")
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}


def _backend(provider: str, url: str) -> str:
    return f"openai:{MODELS['openai']}@{url}/v1" if provider == "openai" else f"anthropic:{MODELS['anthropic']}@{url}"


def _moves(out: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(out / "agentsim.db") as connection:
        return connection.execute("SELECT run, t, agent, action, fallback FROM moves ORDER BY run, t, agent").fetchall()


def _cost(out: Path) -> float:
    """What the agents' calls cost: the start-up probe, which a batched run never needs (its
    calls are answered from the cache), is recorded on a line of its own."""
    usage = json.loads((out / "summary.json").read_text())["usage_by_backend"]
    return float(sum(line["cost_usd"] for label, line in usage.items() if not label.endswith(" (start-up probe)")))


def _environment(tmp_path: Path, name: str) -> dict[str, str]:
    return {**os.environ, "AGENTSIM_CACHE": str(tmp_path / f"{name}.db")}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batched_probes_answer_as_interactive_calls_at_half_the_cost(tmp_path: Path, standin_server: Any,
                                                                      provider: str) -> None:
    server = standin_server(capacity=16)
    backend = _backend(provider, server.url)
    interactive = cli(PROBE, *SMALL, "--backend", backend, "--out", str(tmp_path / "interactive"),
                      env=_environment(tmp_path, "interactive"))
    assert interactive.returncode == 0, interactive.stderr
    before = server.stats.requests
    batched = cli(PROBE, *SMALL, "--backend", backend, "--batch", "--batch-poll", "0.05", "--out", str(tmp_path / "batched"),
                  env=_environment(tmp_path, "batched"))
    assert batched.returncode == 0, batched.stderr
    moves = _moves(tmp_path / "batched")
    assert moves == _moves(tmp_path / "interactive") and len(moves) == 6 * 4
    assert server.stats.batches_created == 1 and server.stats.batch_requests == len(moves)
    assert server.stats.requests - before <= 3  # the start-up probe and the batch's polls; no call was asked alone
    assert _cost(tmp_path / "batched") == pytest.approx(_cost(tmp_path / "interactive") / 2, abs=2e-6)  # (6 decimals kept)
    with sqlite3.connect(tmp_path / "batched" / "agentsim.db") as connection:  # recorded as ordinary calls
        assert connection.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == len(moves)


@pytest.mark.parametrize(("provider", "end", "errored"), [("openai", "expired", 0.0), ("anthropic", "cancelled", 0.0),
                                                          ("openai", "completed", 0.3), ("anthropic", "completed", 0.3)])
def test_what_a_batch_leaves_unanswered_is_submitted_again(tmp_path: Path, standin_server: Any, provider: str, end: str,
                                                           errored: float) -> None:
    server = standin_server(capacity=16, batch_end=end, batch_faulty=1, batch_errored=errored, seed=3)
    batched = cli(PROBE, *SMALL, "--backend", _backend(provider, server.url), "--batch", "--batch-poll", "0.05",
                  "--max-attempts", "6", "--out", str(tmp_path / "out"), env=_environment(tmp_path, "cache"))
    assert batched.returncode == 0, batched.stderr
    assert server.stats.batches_created >= 2 and server.stats.batch_requests > 6 * 4
    assert len(_moves(tmp_path / "out")) == 6 * 4


def test_a_kill_while_waiting_resumes_from_the_recorded_batch(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=16, batch_polls=10**9)  # the batch never ends while the first process waits
    out = tmp_path / "out"
    command = [sys.executable, "-m", "agentsim", PROBE, *SMALL, "--backend", _backend("anthropic", server.url), "--batch",
               "--batch-poll", "0.05", "--out", str(out)]
    process = subprocess.Popen(command, env=_environment(tmp_path, "cache"), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while server.stats.batches_created == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # polling
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    assert server.stats.batches_created == 1
    server.server.config.batch_polls = 1
    resumed = cli(PROBE, *SMALL, "--backend", _backend("anthropic", server.url), "--batch", "--batch-poll", "0.05",
                  "--resume", "--out", str(out), env=_environment(tmp_path, "cache"))
    assert resumed.returncode == 0, resumed.stderr
    assert server.stats.batches_created == 1  # polled the recorded batch, submitted nothing again
    assert len(_moves(out)) == 6 * 4


@pytest.mark.parametrize(("scenario", "backend", "flags", "names"), [
    ("naming_game.py", "anthropic:claude-3-5-haiku-latest@http://127.0.0.1:9", (), "depend on earlier answers"),
    ("individual_bias.py", "stand-in", (), "openai: or anthropic:"),
    ("individual_bias.py", "anthropic:claude-3-5-haiku-latest@http://127.0.0.1:9", ("--no-cache",), "--no-cache"),
])
def test_batch_is_refused_where_it_cannot_apply(tmp_path: Path, scenario: str, backend: str, flags: tuple[str, ...],
                                                names: str) -> None:
    result = cli_in_process(str(ROOT / "scenarios" / scenario), *SMALL, "--backend", backend, "--batch", *flags,
                            "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert names in line, line
