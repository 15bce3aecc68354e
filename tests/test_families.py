"""The registry of game families (agentsim/games/__init__.py): a family in another distribution,
named by an `agentsim.games` entry point, is discovered with its subcommand; one that fails to
import is named in one line and left out, so that it stops no command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FAMILY = '''
from agentsim.games import Family, register_family
from agentsim.analysis.subcommands import command

@command("toss", "a third-party family's subcommand")
def toss(argv: list[str]) -> int:
    print("tossed")
    return 0

register_family(Family(name="coin", summary="a third-party game", scenario_names=("coin_toss",)))
'''


def _distribution(root: Path, package: str, source: str) -> None:
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text(source, encoding="utf-8")
    info = root / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[agentsim.games]\n{package} = {package}\n", encoding="utf-8")


def _run(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, timeout=120, env=environment,
                          cwd=root)


def test_an_entry_point_family_brings_its_subcommand(tmp_path: Path) -> None:
    _distribution(tmp_path, "coin", FAMILY)
    result = _run(tmp_path, "-c", "from agentsim.analysis.commands import SUBCOMMAND_HELP\n"
                                  "from agentsim.cli import main\n"
                                  "print(SUBCOMMAND_HELP['toss'])\n"
                                  "raise SystemExit(main(['toss']))")
    assert result.returncode == 0, result.stderr
    assert "toss" in result.stdout and "a third-party family's subcommand" in result.stdout
    assert result.stdout.strip().endswith("tossed")


def test_a_family_that_fails_to_import_is_named_in_one_line_and_left_out(tmp_path: Path) -> None:
    _distribution(tmp_path, "broken", "raise RuntimeError('no luck')\n")
    result = _run(tmp_path, "-m", "agentsim", "--help")
    assert result.returncode == 0 and "report" in result.stdout  # the rest of agentsim works
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "game family 'broken'" in lines[0] and "no luck" in lines[0], result.stderr


def test_a_family_registered_after_the_table_was_built_brings_its_declared_subcommand(tmp_path: Path) -> None:
    """A family made in a script or notebook, after `agentsim.cli` (and its subcommand table)
    was imported, declaring its subcommand by name: it runs, its module imported then."""
    (tmp_path / "dice_commands.py").write_text(
        "from agentsim.analysis.subcommands import command\n\n"
        "@command('roll')\ndef roll(argv: list[str]) -> int:\n    print('rolled', *argv)\n    return 0\n",
        encoding="utf-8")
    result = _run(tmp_path, "-c", "import sys\n"
                                  "from agentsim.cli import main\n"
                                  "from agentsim.games import Family, register_family\n"
                                  "register_family(Family(name='dice', summary='a late family', commands='dice_commands',\n"
                                  "                       subcommands={'roll': 'roll the dice'}))\n"
                                  "from agentsim.analysis.commands import SUBCOMMAND_HELP\n"
                                  "assert 'dice_commands' not in sys.modules, 'declared, not imported'\n"
                                  "print(SUBCOMMAND_HELP['roll'])\n"
                                  "raise SystemExit(main(['roll', 'twice']))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["roll", "the", "dice", "rolled", "twice"]
