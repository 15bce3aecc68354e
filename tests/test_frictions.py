"""What a new user tripped over (issue 30), each fixed: --resume without retyping the scenario
and its --set values, transcript of one's own scenario from another directory, a prompt
template naming a field nobody supplies, and a critical-mass search that said nothing."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from helpers import ROOT, cli

from agentsim.cli import main

NAMING = str(ROOT / "scenarios" / "naming_game.py")
SEARCH = str(ROOT / "scenarios" / "critical_mass_search.py")
MINE = """
from agentsim.games.naming import NamingGame


class Mine(NamingGame):
    name = "mine"


scenario = Mine(agents=6, max_rounds=2)
"""


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_resume_reads_the_scenario_and_settings_from_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    started = [NAMING, "--out", str(out), "--set", "agents=6", "--set", "max_rounds=2", "--seed", "5", "--no-live"]
    assert main(started) == 0
    capsys.readouterr()
    assert main(["--resume", "--out", str(out), "--add-runs", "1", "--no-live"]) == 0  # nothing retyped
    summary = json.loads((out / "summary.json").read_text())
    assert [run["seed"] for run in summary["runs"]] == [5, 6] and summary["params"]["agents"] == 6
    capsys.readouterr()
    assert main([NAMING, "--resume", "--out", str(out), "--set", "agents=8", "--seed", "5", "--no-live"]) == 2
    line = one_line(capsys)
    assert "agents was 6 there, 8 here: --set agents=6" in line and "python -m agentsim --resume --out" in line
    assert main([NAMING, "--resume", "--out", str(out), "--set", "agents=6", "--set", "max_rounds=2", "--no-live"]) == 2
    assert "--seed was 5 there, 0 here" in one_line(capsys)


def test_resume_without_a_scenario_needs_the_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--resume", "--no-live"]) == 2
    assert "--resume --out DIR" in one_line(capsys)
    assert main(["--no-live"]) == 2
    assert "give a scenario file" in one_line(capsys)


def test_transcript_of_ones_own_scenario_from_another_directory(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    launch, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    launch.mkdir()
    elsewhere.mkdir()
    (launch / "mine.py").write_text(MINE)
    assert cli("mine.py", "--out", "out", "--no-live", cwd=launch).returncode == 0  # a relative path, as typed
    connection = sqlite3.connect(launch / "out" / "agentsim.db")
    (stored,) = connection.execute("SELECT value FROM experiment WHERE key = 'scenario_file'").fetchone()
    connection.close()
    assert json.loads(stored) == str(launch / "mine.py")  # absolute: it means the same from anywhere
    refused = cli("transcript", str(launch / "out"), cwd=elsewhere)  # the recorded file is named, never run
    assert refused.returncode == 2 and f"--scenario {launch / 'mine.py'}" in refused.stderr, refused.stderr
    shown = cli("transcript", str(launch / "out"), "--run", "1", "--scenario", str(launch / "mine.py"), cwd=elsewhere)
    assert shown.returncode == 0 and "=== run 1" in shown.stdout, shown.stderr


def test_a_template_field_nobody_supplies_stops_at_start_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    standard = (ROOT / "agentsim" / "games" / "naming" / "prompts" / "standard.txt").read_text()
    assert "values: {options}." in standard
    (tmp_path / "team.txt").write_text(standard.replace("values: {options}.", "values: {options} (team {team}).", 1))
    (tmp_path / "team.py").write_text("from pathlib import Path\nfrom agentsim.games.naming import NamingGame\n"
                                      "scenario = NamingGame(agents=6, max_rounds=2, "
                                      "prompt=str(Path(__file__).with_name('team.txt')))\n")
    assert main([str(tmp_path / "team.py"), "--out", str(tmp_path / "out"), "--no-live"]) == 2
    line = one_line(capsys)
    assert "uses the field {team} in its [system] section" in line and "prompt_fields()" in line
    assert not (tmp_path / "out").exists()  # before the store, so before any call


def test_the_critical_mass_search_reports_each_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["critical-mass", SEARCH, "--out", str(tmp_path / "search"), "--runs", "1", "--set", "agents=8",
                 "--max-rounds", "12"]) == 0
    captured = capsys.readouterr()
    progress = [line for line in captured.err.splitlines() if line.startswith("critical-mass: ")]
    results = captured.out.strip().splitlines()
    assert len(results) == 2
    for result in results:  # every size the result lists was announced and reported as it finished
        against = result.partition(":")[0]
        for size in re.findall(r"(\d+):\d+/\d+", result.partition("flips by size")[2]):
            assert any(line.startswith(f"critical-mass: {against}: trying") and f" {size}" in line
                       for line in progress), (size, progress)
            assert any(f"{against}: {size} of 8 committed flipped" in line for line in progress), (size, progress)
    assert any("critical mass between" in line for line in progress)


def test_report_of_runs_stopped_inside_their_first_generation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Donor game stopped by max_rounds before a generation ended crashed the report
    (IndexError); now it draws what there is and says what is missing."""
    from agentsim.analysis.report import build_report

    out = tmp_path / "donor"
    assert main([str(ROOT / "scenarios" / "donor_game.py"), "--out", str(out), "--runs", "1", "--set", "max_rounds=1",
                 "--no-live"]) == 0
    index = build_report(out)
    assert "usage" in index["sections"]
    assert "no run has finished a generation yet" in (out / "report" / "report.html").read_text()
