"""Fallbacks from replies the game could not read do not survive a resume (issue 37, item 7):
when the fallback breaker stops a run, the encounters that tripped it are not committed, and
the unreadable replies are taken out of the response cache, so `--resume` against the fixed
server records what a clean run records. Real HTTP, the stand-in server on 127.0.0.1."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from helpers import ROOT, cli, dump
from servers import standin_server  # noqa: F401  (fixture)

NAMING = str(ROOT / "scenarios" / "naming_game.py")
SETTINGS = ("--set", "agents=8", "--set", "max_rounds=12", "--set", "stop_at=none", "--seed", "4", "--no-live",
            "--health-window", "20", "--checkpoint-seconds", "60")


def test_a_run_stopped_for_fallbacks_resumes_as_a_clean_run(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8)
    backend = ("--backend", f"openai:m@{server.url}/v1")
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    result = cli(NAMING, *backend, "--out", str(clean), "--cache", str(tmp_path / "a.db"), *SETTINGS)
    assert result.returncode == 0, result.stderr

    server.faults({"unparseable": 1.0})  # the server answers, with replies no game can read
    cache = ("--cache", str(tmp_path / "b.db"))
    result = cli(NAMING, *backend, "--out", str(broken), *cache, *SETTINGS)
    assert result.returncode == 3 and "decisions fell back" in result.stderr, result.stderr
    recorded = sqlite3.connect(broken / "agentsim.db")
    assert recorded.execute("SELECT COUNT(*) FROM decisions WHERE fallback = 1").fetchone() == (0,)
    recorded.close()

    server.faults({})  # fixed: the resumed run asks it again, not the cache
    result = cli("--resume", "--out", str(broken), *cache, "--no-live", timeout=120)
    assert result.returncode == 0, result.stderr
    tables = ("encounters", "decisions")
    assert dump(broken / "agentsim.db", tables=tables) == dump(clean / "agentsim.db", tables=tables)
