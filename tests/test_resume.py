"""A run killed with SIGKILL at any moment, then resumed, records exactly what an uninterrupted
run records (wall-clock columns aside); Ctrl-C stops cleanly and resumes the same way; a
resume by another agentsim continues a checkpoint of the same format (saying so) and refuses
one of another."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, cli, dump

from agentsim.errors import OutputDirError
from agentsim.runner import Experiment, ExperimentConfig, code_version
from agentsim.scenario_files import load_scenario

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


def killed_and_resumed_as_whole(settings: list[str], tmp_path: Path, *, after_rounds: int) -> None:
    """`python -m agentsim SETTINGS` run whole, and again killed with SIGKILL once `after_rounds`
    round lines are recorded, then `--resume`d: the two stores hold the same rows (`dump`)."""
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert cli(*settings, "--out", str(whole), timeout=300).returncode == 0
    process = subprocess.Popen([sys.executable, "-m", "agentsim", *settings, "--out", str(killed)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while recorded_rounds(killed / "agentsim.db") < after_rounds:
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert 0 < len(dump(killed / "agentsim.db")["rounds"]) < len(dump(whole / "agentsim.db")["rounds"])
    result = cli(*settings, "--out", str(killed), "--resume", timeout=300)
    assert result.returncode == 0, result.stderr
    assert dump(killed / "agentsim.db") == dump(whole / "agentsim.db")


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
    assert f"continue its 2 runs with --resume --out {stopped}" in stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr
    statuses = {row[4] for row in dump(stopped / "agentsim.db")["runs"]}
    assert statuses == {"interrupted"}
    assert cli(SCENARIO, "--out", str(stopped), "--resume", *settings("sequential"), timeout=120).returncode == 0
    assert dump(stopped / "agentsim.db") == dump(whole / "agentsim.db")


class _Warnings:
    """A view that keeps the warnings it is shown."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def start(self, experiment: dict[str, Any]) -> None: ...
    def update(self, runs: list[Any], *, final: bool = False) -> None: ...
    def stop(self) -> None: ...

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def _left_unfinished(out: Path, **recorded: str | bytes) -> ExperimentConfig:
    """A short experiment recorded in `out`, its run 1 set back to unfinished and the
    experiment's `recorded` values (or run 1's checkpoint, `state`) replaced, as an older
    agentsim would have left them; the config that resumes it."""
    scenario = load_scenario(SCENARIO)[0].with_params(agents=10, max_rounds=4, stop_at="none")
    first = Experiment(ExperimentConfig(scenario=scenario, out=out, seed=5), _Warnings())
    first.open()
    asyncio.run(first.run())
    connection = sqlite3.connect(out / "agentsim.db")
    connection.execute("UPDATE runs SET status = 'interrupted', stop_reason = 'interrupted', summary = json_set(summary, "
                       "'$.status', 'interrupted', '$.stop_reason', 'interrupted') WHERE run = 1")  # (the row whole)
    for key, value in recorded.items():
        if key == "state":
            connection.execute("UPDATE checkpoints SET state = ? WHERE run = 1", (value,))
        else:
            connection.execute("UPDATE experiment SET value = ? WHERE key = ?", (json.dumps(value), key))
    connection.commit()
    connection.close()
    return ExperimentConfig(scenario=scenario, out=out, seed=5, resume=True)


def test_a_resume_by_another_code_version_of_the_same_checkpoint_format_says_so_once(tmp_path: Path) -> None:
    config = _left_unfinished(tmp_path / "out", code_version="0.0.1+0ld")
    view = _Warnings()
    resumed = Experiment(config, view)
    resumed.open()
    (summary,) = asyncio.run(resumed.run())
    assert summary["status"] == "done"
    (line,) = [warning for warning in view.warnings if "0.0.1+0ld" in warning]
    assert code_version() in line and "\n" not in line
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["code_version"] == code_version()


def test_a_resume_by_the_same_code_version_says_nothing_of_it(tmp_path: Path) -> None:
    view = _Warnings()
    resumed = Experiment(_left_unfinished(tmp_path / "out"), view)
    resumed.open()
    asyncio.run(resumed.run())
    assert not [warning for warning in view.warnings if "recorded by agentsim" in warning]


def test_a_checkpoint_of_another_format_is_refused_in_one_line_and_nothing_changes(tmp_path: Path) -> None:
    config = _left_unfinished(tmp_path / "out", code_version="9.9.9",
                              state=zlib.compress(b'{"checkpoint_format":7,"state":null}'))
    before = (tmp_path / "out" / "agentsim.db").read_bytes()
    with pytest.raises(OutputDirError) as refused:
        Experiment(config, _Warnings()).open()
    message = str(refused.value)
    assert "format 7" in message and "9.9.9" in message and "--out NEW_DIR" in message and "\n" not in message
    assert (tmp_path / "out" / "agentsim.db").read_bytes() == before
