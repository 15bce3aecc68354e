"""A results directory is data, never code: `--resume`, `report`, `transcript` and `bias` run
nothing the database or the directory names (a crafted pickled checkpoint, a scenario file
recorded inside the directory), each refusing in one line what it cannot do safely; a resume
refuses a prompt template edited since the runs were sent, and never rewrites a stored one."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, cli
from test_cli import assert_user_error

NAMING = str(ROOT / "scenarios" / "naming_game.py")
QUICK = ("--set", "agents=8", "--set", "max_rounds=3", "--no-live")

NOTES = """import pathlib
pathlib.Path({marker!r}).touch()  # what a results directory must never run
from agentsim.games.naming import NamingGame
class Notes(NamingGame):
    name = "naming_game"
scenario = Notes()
"""

HARMLESS = """from agentsim.games.naming import NamingGame
class Notes(NamingGame):
    name = "naming_game"
scenario = Notes()
"""


class _Touch:
    """Unpickling it creates `path`: the proof that a checkpoint ran code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path.touch, (self.path,))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("recorded") / "out"
    result = cli(NAMING, "--out", str(out), *QUICK)
    assert result.returncode == 0, result.stderr
    return out


def _crafted(recorded: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of a finished run whose run 1 looks interrupted, whose checkpoint would touch a
    marker if unpickled, and whose recorded scenario file (inside the directory) would touch
    it if run."""
    out = tmp_path / "out"
    shutil.copytree(recorded, out)
    marker = tmp_path / "MARKER"
    notes = out / "notes.py"
    notes.write_text(NOTES.format(marker=str(marker)))
    connection = sqlite3.connect(out / "agentsim.db")
    connection.execute("UPDATE runs SET status = 'interrupted' WHERE run = 1")
    connection.execute("UPDATE checkpoints SET state = ? WHERE run = 1", (zlib.compress(pickle.dumps(_Touch(marker))),))
    connection.executemany("INSERT OR REPLACE INTO experiment VALUES (?, ?)",
                           [("scenario_file", json.dumps(str(notes))),
                            ("scenario_class", json.dumps("agentsim_scenarios.notes.Notes"))])
    connection.commit()
    connection.close()
    return out, marker


def _digest(out: Path) -> str:
    return hashlib.sha256((out / "agentsim.db").read_bytes()).hexdigest()


def test_opening_a_crafted_directory_runs_nothing(recorded: Path, tmp_path: Path) -> None:
    out, marker = _crafted(recorded, tmp_path)
    before = _digest(out)
    assert_user_error(cli(NAMING, "--out", str(out), "--resume", *QUICK), "cannot be continued", "another format",
                      "--out NEW_DIR")
    assert _digest(out) == before, "a refused resume changed the database"
    for command in (("report", str(out)), ("transcript", str(out)), ("bias", str(out))):
        result = cli(*command)
        assert result.returncode == 2, (command, result.stderr)
        (line,) = result.stderr.strip().splitlines()
        assert "--scenario" in line and "notes.py" in line and "Traceback" not in result.stderr, line
    assert not marker.exists(), "opening the results directory ran code"


def test_a_scenario_file_the_user_names_is_used(recorded: Path, tmp_path: Path) -> None:
    out, marker = _crafted(recorded, tmp_path)
    elsewhere = tmp_path / "mine" / "notes.py"
    elsewhere.parent.mkdir()
    elsewhere.write_text(HARMLESS)
    result = cli("transcript", str(out), "--run", "1", "--scenario", str(elsewhere))
    assert result.returncode == 0, result.stderr
    assert "=== run 1" in result.stdout
    assert cli("report", str(out), "--scenario", str(elsewhere)).returncode == 0
    assert not marker.exists()


def test_an_installed_scenario_class_needs_no_file(recorded: Path, tmp_path: Path) -> None:
    """The recorded class imports from the installed package: the recorded file (inside the
    directory) is never looked at."""
    out, marker = _crafted(recorded, tmp_path)
    connection = sqlite3.connect(out / "agentsim.db")
    connection.execute("UPDATE experiment SET value = ? WHERE key = 'scenario_class'",
                       (json.dumps("agentsim.games.naming.game.NamingGame"),))
    connection.commit()
    connection.close()
    for command in (("report", str(out)), ("transcript", str(out), "--run", "1"), ("bias", str(out))):
        result = cli(*command)
        assert result.returncode in (0, 2) and "Traceback" not in result.stderr, (command, result.stderr)
        assert "--scenario" not in result.stderr, result.stderr
    assert not marker.exists()


def test_a_class_in_a_module_inside_the_directory_is_not_imported(recorded: Path, tmp_path: Path) -> None:
    """`notes.Notes` would import DIR/notes.py when DIR is the working directory: refused."""
    out, marker = _crafted(recorded, tmp_path)
    connection = sqlite3.connect(out / "agentsim.db")
    connection.execute("UPDATE experiment SET value = ? WHERE key = 'scenario_class'", (json.dumps("notes.Notes"),))
    connection.commit()
    connection.close()
    result = cli("transcript", ".", cwd=out)
    assert result.returncode == 2 and "--scenario" in result.stderr, result.stderr
    assert not marker.exists()


def test_resume_refuses_an_edited_prompt_template(tmp_path: Path) -> None:
    template = tmp_path / "mine.txt"
    template.write_text((ROOT / "agentsim" / "games" / "naming" / "prompts" / "standard.txt").read_text())
    out = tmp_path / "out"
    arguments = (NAMING, "--out", str(out), "--set", f"prompt={template}", *QUICK)
    assert cli(*arguments).returncode == 0
    sent = template.read_text()
    template.write_text(sent + "\nAnswer quickly.\n")
    before = _digest(out)
    assert_user_error(cli(*arguments, "--resume", "--add-runs", "1"), "prompt template 'mine'", "edited")
    assert _digest(out) == before
    stored = json.loads(sqlite3.connect(out / "agentsim.db").execute(
        "SELECT value FROM experiment WHERE key = 'prompt_templates'").fetchone()[0])
    assert stored == {"mine": sent}
    template.write_text(sent)  # restored: the resume goes on
    assert cli(*arguments, "--resume", "--add-runs", "1").returncode == 0


@pytest.mark.parametrize("named", ["evilmod.Scen", "this.Scen"])
def test_a_module_the_results_name_is_never_imported(recorded: Path, tmp_path: Path, named: str) -> None:
    """Issue 37, item 1: a recorded class is resolved only among registered game families (or
    a scenario file the user names): `evilmod` in the working directory and the standard
    library's `this` are never imported."""
    out, marker = _crafted(recorded, tmp_path)
    connection = sqlite3.connect(out / "agentsim.db")
    connection.execute("UPDATE experiment SET value = ? WHERE key = 'scenario_class'", (json.dumps(named),))
    connection.commit()
    connection.close()
    work = tmp_path / "work"
    work.mkdir()
    (work / "evilmod.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n")
    for command in (("report", str(out)), ("transcript", str(out), "--run", "1"), ("bias", str(out))):
        result = cli(*command, cwd=work)
        assert result.returncode == 2 and "--scenario" in result.stderr, (command, result.stderr)
        assert "Zen of Python" not in result.stdout + result.stderr
    assert not marker.exists(), "opening the results imported a module they name"
