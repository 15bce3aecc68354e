"""A disk that fills up stops the run with one line and loses nothing: what was committed
stays readable, and `--resume` (no other flag) finishes every planned run with the moves of an
uninterrupted run. The disk fills for real: the child process may write files of at most N
bytes (RLIMIT_FSIZE), so its writes fail as on a full disk, and this works as root too."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from helpers import ROOT, cli

CRITICAL_MASS = str(ROOT / "scenarios" / "critical_mass.py")
# Rows are committed only as each run ends, so where the disk fills does not depend on timing.
RUNS = ("--runs", "4", "--no-live", "--checkpoint-seconds", "86400")

_ON_A_SMALL_DISK = """
import resource, runpy, signal, sys
limit = int(sys.argv.pop(1))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv[0] = "agentsim"
runpy.run_module("agentsim", run_name="__main__")
"""


def _on_a_disk_of(limit: int, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _ON_A_SMALL_DISK, str(limit), *arguments], capture_output=True,
                          text=True, timeout=60, check=False)


def _rows(out: Path, query: str) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(out / "agentsim.db")
    try:
        return connection.execute(query).fetchall()
    finally:
        connection.close()


def _last_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    return result.stderr.strip().splitlines()[-1]


def test_a_disk_that_fills_mid_run_loses_nothing_and_resume_finishes_the_experiment(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    assert cli(CRITICAL_MASS, "--out", str(whole), *RUNS).returncode == 0
    moves = _rows(whole, "SELECT * FROM moves ORDER BY run, t, agent")
    size = (whole / "agentsim.db").stat().st_size

    out = tmp_path / "full"
    # The write-ahead log reaches the whole database's size about halfway through.
    result = _on_a_disk_of(size, CRITICAL_MASS, "--out", str(out), *RUNS)
    assert result.returncode == 2, result.stderr
    assert _last_line(result).startswith("agentsim: error: cannot write"), result.stderr
    assert f"--resume --out {out}" in _last_line(result)
    assert _rows(out, "PRAGMA integrity_check") == [("ok",)]
    kept = _rows(out, "SELECT * FROM moves ORDER BY run, t, agent")
    assert 0 < len(kept) < len(moves) and set(kept) <= set(moves)

    resumed = cli(CRITICAL_MASS, "--out", str(out), "--resume", "--no-live")  # the file's RUNS is 1
    assert resumed.returncode == 0, resumed.stderr
    assert _rows(out, "SELECT status FROM runs ORDER BY run") == [("done",)] * 4
    assert _rows(out, "SELECT * FROM moves ORDER BY run, t, agent") == moves


def test_a_disk_full_before_the_tables_exist_leaves_a_directory_that_starts_afresh(tmp_path: Path) -> None:
    out = tmp_path / "full"
    result = _on_a_disk_of(8192, CRITICAL_MASS, "--out", str(out), *RUNS)
    assert result.returncode == 2, result.stderr
    assert _last_line(result).startswith("agentsim: error: cannot write"), result.stderr
    assert _rows(out, "SELECT name FROM sqlite_master WHERE type = 'table'") == []  # all the tables or none

    resumed = cli(CRITICAL_MASS, "--out", str(out), "--resume", "--no-live")
    assert resumed.returncode == 2 and "nothing to resume" in _last_line(resumed)
    assert cli(CRITICAL_MASS, "--out", str(out), *RUNS).returncode == 0
    assert _rows(out, "SELECT status FROM runs ORDER BY run") == [("done",)] * 4
