"""The command line, as a user runs it: exit 0 on success; exit 2 and one line naming the fix
for each mistake a user can make; nothing already recorded is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, cli, cli_in_process, dump

CRITICAL_MASS = str(ROOT / "scenarios" / "critical_mass.py")
QUICK = ("--set", "max_rounds=3", "--no-live")


def assert_user_error(result, *fragments: str) -> None:  # type: ignore[no-untyped-def]
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, f"expected one line, got: {result.stderr!r}"
    assert lines[0].startswith("agentsim: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_runs_a_scenario_and_says_it_used_the_stand_in(tmp_path: Path) -> None:
    result = cli(CRITICAL_MASS, "--out", str(tmp_path / "out"), "--runs", "2", *QUICK)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["backend"] == "stand-in" and summary["stand_in"] is True
    assert [run["seed"] for run in summary["runs"]] == [0, 1]
    assert all(run["status"] == "done" and run["interactions"] > 0 for run in summary["runs"])
    assert "stand_in=True" in result.stderr  # the log lines say so too


def test_default_output_directory_is_under_results(tmp_path: Path) -> None:
    result = cli(CRITICAL_MASS, *QUICK, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (directory,) = (tmp_path / "results" / "critical_mass").iterdir()  # named after the file
    assert (directory / "agentsim.db").is_file() and (directory / "summary.json").is_file()


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (("missing.py",), ("'missing.py' not found", "scenarios/naming_game.py")),
        ((CRITICAL_MASS, "--set", "colour=blue"), ("unknown parameter 'colour'", "known parameters are")),
        ((CRITICAL_MASS, "--set", "agents=many"), ("agents must be a whole number",)),
        ((CRITICAL_MASS, "--set", "agents"), ("--set takes KEY=VALUE",)),
        ((CRITICAL_MASS, "--backend", "gpt5"), ("unknown backend 'gpt5'", "stand-in")),
        ((CRITICAL_MASS, "--set", "names=Q"), ("names must hold at least 2 names",)),
        ((CRITICAL_MASS, "--set", "names=", "--set", "pool_size=1"), ("pool_size (W) must be at least 2",)),
        ((CRITICAL_MASS, "--set", "pool_size=1"), ("pool_size=1 does not apply: the name pool is given (Q, M)", "names=")),
        ((CRITICAL_MASS, "--set", "memory_length=-1"), ("memory_length (H) must be >= 0",)),
        ((CRITICAL_MASS, "--set", "committed=30"), ("30 committed agents leave no uncommitted agent", "committed_mode=add")),
        ((CRITICAL_MASS, "--set", "committed_name=Z"), ("committed_name 'Z' is not in the name pool",)),
        ((CRITICAL_MASS, "--set", "pairing=sometimes"), ("pairing must be one of sequential, network, rounds",)),
        ((CRITICAL_MASS, "--runs", "0"), ("--runs must be between 1 and 10000 (got 0)",)),
        ((CRITICAL_MASS, "--seed", "x"), ("invalid int value",)),
        ((CRITICAL_MASS, "--set", "topology=ring", "--set", "pairing=network", "--set", "topology_degree=3"),
         ("topology_degree for a ring must be even",)),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, tuple) else value,
)
def test_each_mistake_is_one_line_and_exit_2(tmp_path: Path, arguments: tuple[str, ...], fragments: tuple[str, ...],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli_in_process(*arguments, "--out", str(tmp_path / "out"), "--no-live")
    assert_user_error(result, *fragments)
    assert not (tmp_path / "out").exists(), "a refused run must not create its output directory"


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("from agentsim.games.naming import NamingGame\nscenario = NamingGame(\n", "syntax error at line"),
        ("raise RuntimeError('boom')\n", "failed to load (RuntimeError: boom)"),
        ("from agentsim.games.naming import NamingGame\nscenario = NamingGame(agents=1)\n", "agents must be at least 2"),
        ("x = 1\n", "defines no scenario"),
        ("from agentsim.games.naming import NamingGame\na = NamingGame()\nb = NamingGame()\n", "defines several scenarios"),
    ],
)
def test_a_broken_scenario_file_is_one_line_and_exit_2(tmp_path: Path, source: str, fragment: str) -> None:
    path = tmp_path / "broken.py"
    path.write_text(source)
    assert_user_error(cli(str(path), "--no-live"), fragment)


def test_a_file_with_one_scenario_class_runs_it(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text("from agentsim.games.naming import NamingGame\n\n"
                    "class Mine(NamingGame):\n    name = 'mine'\n")
    result = cli(str(path), "--out", str(tmp_path / "out"), *QUICK)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["scenario"] == "mine"


def test_an_output_directory_with_results_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli(CRITICAL_MASS, "--out", str(out), *QUICK).returncode == 0
    before = dump(out / "agentsim.db")
    assert_user_error(cli(CRITICAL_MASS, "--out", str(out), *QUICK), "already holds results", "--resume")
    assert_user_error(cli(CRITICAL_MASS, "--out", str(out), "--resume", "--set", "agents=30", "--no-live"),
                      "holds a different experiment (agents was 24 there, 30 here: --set agents=24)")
    assert dump(out / "agentsim.db") == before


def test_resume_of_a_finished_experiment_adds_only_the_runs_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli(CRITICAL_MASS, "--out", str(out), *QUICK).returncode == 0
    first = dump(out / "agentsim.db")
    assert cli(CRITICAL_MASS, "--out", str(out), "--resume", "--add-runs", "1", *QUICK).returncode == 0
    second = dump(out / "agentsim.db")
    assert [row for row in second["encounters"] if row[0] == 1] == first["encounters"]
    assert {row[0] for row in second["encounters"]} == {1, 2}


def test_resume_keeps_the_recorded_run_count(tmp_path: Path) -> None:
    """Issue 37, item 6: a file with RUNS = 3 run with --runs 1, then `--resume --out DIR` (what
    the Ctrl-C line says) continues that one run; a --runs that differs from the recorded count
    is refused naming --add-runs, which alone adds replicates."""
    scenario = tmp_path / "three.py"
    scenario.write_text(Path(CRITICAL_MASS).read_text() + "\nRUNS = 3\n")
    out = tmp_path / "out"
    assert cli(str(scenario), "--out", str(out), "--runs", "1", *QUICK).returncode == 0
    before = dump(out / "agentsim.db")
    for arguments in (("--resume", "--out", str(out), "--no-live"), (str(scenario), "--resume", "--out", str(out), *QUICK)):
        result = cli(*arguments)
        assert result.returncode == 0, result.stderr
        assert {row[0] for row in dump(out / "agentsim.db")["runs"]} == {1}
    for runs in ("2", "3"):
        assert_user_error(cli(str(scenario), "--resume", "--out", str(out), "--runs", runs, *QUICK),
                          "records 1 run and", f"--runs {runs}", "--add-runs")
    assert dump(out / "agentsim.db") == before
    assert cli("--resume", "--out", str(out), "--add-runs", "1", "--no-live").returncode == 0
    assert {row[0] for row in dump(out / "agentsim.db")["runs"]} == {1, 2}
    assert_user_error(cli(str(scenario), "--resume", "--out", str(out), "--runs", "1", *QUICK), "records 2 runs",
                      "--runs 1", "never dropped")
