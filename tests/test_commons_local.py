"""A short commons run on a real model in process (the local backend: transformers + torch,
a tiny randomly initialised Llama built by tests/test_local_backend.py's fixture, no
download): every phase asks the model, its own replies are recorded, and what does not parse
is re-asked and then counted as a fallback, never read as a choice."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import ROOT, cli
from test_local_backend import tiny_model  # noqa: F401  (the fixture)


def test_a_short_commons_run_on_a_local_model_records_its_own_replies(tmp_path: Path, tiny_model: Path) -> None:
    out = tmp_path / "out"
    result = cli(str(ROOT / "scenarios" / "commons_fishing.py"), "--backend", f"local:{tiny_model}", "--runs", "1",
                 "--set", "months=1", "--set", "agents=3", "--set", "max_tokens=16", "--set", "max_reasks=1",
                 "--set", "max_utterances=2", "--set", "max_insights=1", "--no-live", "--out", str(out),
                 "--max-fallback-share", "1", timeout=300)
    assert result.returncode == 0, result.stderr
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    assert run["status"] == "done" and run["calls"] > 0
    connection = sqlite3.connect(out / "agentsim.db")
    replies = [reply for (reply,) in connection.execute("SELECT reply FROM calls WHERE run = 1")]
    assert len(replies) == run["calls"] and all(isinstance(reply, str) for reply in replies)
    assert not any("Answer: 14 tons" in reply for reply in replies)  # the model's text, not the stand-in's
    harvests = connection.execute(
        "SELECT d.agent, d.error, d.action FROM decisions d JOIN decisions f ON f.run = d.run AND f.t = d.t AND "
        "f.agent = d.agent AND f.attempt = 0 WHERE d.run = 1 AND d.payoff IS NOT NULL AND "
        "f.context LIKE '{\"kind\":\"harvest\"%'").fetchall()
    assert len(harvests) == 3
    unparsed = sum(1 for _, error, _ in harvests if error is not None)
    assert run["harvest_fallbacks"] == unparsed  # each counted, none analysed as a choice
    assert unparsed == 0 or (run["invalid_replies"] >= unparsed and run["reasks"] > 0)
    kinds = {json.loads(context)["kind"] for (context,) in connection.execute(
        "SELECT context FROM calls WHERE run = 1 AND attempt = 0")}
    assert {"importance", "harvest"} <= kinds
