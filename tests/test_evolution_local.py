"""One short Donor-game generation on a real model in process (the local backend:
transformers + torch, the tiny randomly initialised Llama of tests/test_local_backend.py's
fixture, no download): every text and move is the model's own reply, recorded with its
context, and what does not parse is a recorded fallback, never a choice."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import ROOT, cli
from test_local_backend import tiny_model  # noqa: F401  (the fixture)

from agentsim.games.evolution.prompts import DonorView, Task, decode


def test_one_donor_generation_on_a_local_model_records_its_own_replies(tmp_path: Path, tiny_model: Path) -> None:
    out = tmp_path / "out"
    result = cli(str(ROOT / "scenarios" / "donor_game.py"), "--backend", f"local:{tiny_model}", "--runs", "1",
                 "--set", "condition=norms", "--set", "agents=2", "--set", "rounds=1", "--set", "games=1",
                 "--set", "generations=1", "--set", "max_tokens=16", "--set", "max_reasks=1", "--no-live",
                 "--out", str(out), "--max-fallback-share", "1", timeout=300)
    assert result.returncode == 0, result.stderr
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    assert run["status"] == "done" and run["calls"] >= 5  # 2 strategies, 2 norm sets, 1 donation (and re-asks)
    connection = sqlite3.connect(out / "agentsim.db")
    rows = connection.execute("SELECT context, reply, error, fallback, action FROM decisions WHERE run = 1 "
                              "AND reply IS NOT NULL ORDER BY t, attempt").fetchall()
    assert len(rows) == run["calls"]
    assert not any("My strategy will be to give" in reply for _, reply, *_ in rows)  # the model's text, not the stand-in's
    kinds = {type(decode(context)).__name__ for context, *_ in rows if context}
    assert kinds == {Task.__name__, DonorView.__name__}
    (generation,) = run["generations"]
    donation_fallbacks = generation["fallbacks"].get("play", 0)
    assert generation["donor_choices"] + donation_fallbacks == 1  # the one donation: a choice or a fallback
    assert (generation["donation_fraction"] is None) == (donation_fallbacks == 1)
    flagged = connection.execute("SELECT COUNT(*) FROM moves WHERE run = 1 AND fallback").fetchone()[0]
    assert flagged == sum(generation["fallbacks"].values())  # every fallback marked in the store
