"""A run killed with SIGKILL at any moment, then resumed, records exactly what an uninterrupted
run records (wall-clock columns aside); Ctrl-C stops cleanly and resumes the same way."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT, cli, dump

SCENARIO = str(ROOT / "scenarios" / "naming_game.py")


def settings(pairing: str) -> list[str]:
    return ["--set", "agents=60", "--set", "pool_size=5", "--set", f"pairing={pairing}", "--set", "stop_at=none",
            "--set", "max_rounds=120", "--set", "max_in_flight=6", "--seed", "3", "--runs", "2",
            "--checkpoint-seconds", "0", "--no-live"]


def recorded_rounds(database: Path) -> int:
    try:
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=0.1)
        try:
            return connection.execute("SELECT COUNT(*) FROM rounds").fetchone()[0]
        finally:
            connection.close()
    except sqlite3.Error:
        return 0


def interrupt_midway(out: Path, pairing: str, how: signal.Signals) -> subprocess.CompletedProcess[str] | int:
    process = subprocess.Popen([sys.executable, "-m", "agentsim", SCENARIO, "--out", str(out), *settings(pairing)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while recorded_rounds(out / "agentsim.db") < 40:
        assert process.poll() is None, "the run ended before it could be interrupted: " + process.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(how)
    process.wait(timeout=30)
    stderr = process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    return process.returncode, stderr  # type: ignore[return-value]


@pytest.mark.parametrize("pairing", ["rounds", "sequential"])
def test_kill_9_then_resume_records_what_an_uninterrupted_run_does(tmp_path: Path, pairing: str) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert cli(SCENARIO, "--out", str(whole), *settings(pairing), timeout=120).returncode == 0
    code, _ = interrupt_midway(killed, pairing, signal.SIGKILL)
    assert code == -signal.SIGKILL
    partial = dump(killed / "agentsim.db")
    assert 0 < len(partial["encounters"]) < len(dump(whole / "agentsim.db")["encounters"])
    assert {row[4] for row in partial["runs"]} == {"running"}

    result = cli(SCENARIO, "--out", str(killed), "--resume", *settings(pairing), timeout=120)
    assert result.returncode == 0, result.stderr
    assert dump(killed / "agentsim.db") == dump(whole / "agentsim.db")


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    assert cli(SCENARIO, "--out", str(whole), *settings("sequential"), timeout=120).returncode == 0
    code, stderr = interrupt_midway(stopped, "sequential", signal.SIGINT)
    assert code == 130, stderr
    assert "interrupted" in stderr and "--resume" in stderr
    assert "Traceback" not in stderr
    statuses = {row[4] for row in dump(stopped / "agentsim.db")["runs"]}
    assert statuses == {"interrupted"}
    assert cli(SCENARIO, "--out", str(stopped), "--resume", *settings("sequential"), timeout=120).returncode == 0
    assert dump(stopped / "agentsim.db") == dump(whole / "agentsim.db")
