"""Start-up (issue 29): a run imports what it uses and nothing else heavy. The registry lists every
family's subcommands from its light `__init__`, so a naming run imports no other family's game,
no subcommand module, no report (matplotlib), no SDK of a backend it does not build (the lean
OpenAI-compatible path posts with aiohttp, without the `openai` package) and no local model
library. Timings are the benchmark's (`benchmarks/throughput.py --only startup`); here only
what is imported is checked, in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

import agentsim.games
from agentsim.analysis.commands import SUBCOMMAND_HELP, SUBCOMMANDS
from agentsim.games import FAMILIES, discover

HEAVY = ("matplotlib", "openai", "anthropic", "torch", "transformers", "llama_cpp", "ray", "httpx")
OTHER_FAMILIES = ("commons", "dilemma", "evolution", "sign", "theory")

# A naming run built as the command line builds it (its scenario loaded, its backends and store
# opened: everything but the run), on a TGI server and a local OpenAI-compatible one.
PREPARE = """
import json, sys
from agentsim import cli
options = cli.build_parser().parse_args([sys.argv[1], "--population",
    "tgi:http://127.0.0.1:9=2,openai:small@http://127.0.0.1:9/v1=2", "--no-live", "--no-cache", "--out", sys.argv[2],
    "--set", "agents=4"])
experiment = cli._prepare(options)
experiment.lock.release()
print(json.dumps(sorted(sys.modules)))
"""


def test_a_naming_run_imports_no_other_game_no_subcommand_no_sdk_and_no_figures(tmp_path: Path) -> None:
    environment = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    result = subprocess.run([sys.executable, "-c", PREPARE, str(ROOT / "scenarios" / "naming_game.py"),
                             str(tmp_path / "out")], capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 0, result.stderr
    modules = set(json.loads(result.stdout))
    assert {"agentsim.games.naming.game", "agentsim.llm.tgi", "agentsim.llm.openai_http"} <= modules  # it was built
    assert [name for name in HEAVY if name in modules] == []
    others = sorted(name for name in modules for family in OTHER_FAMILIES if name.startswith(f"agentsim.games.{family}."))
    assert others == []  # their packages declare the family; none of their modules is imported
    assert sorted(name for name in modules if name.endswith(".commands") and name.startswith("agentsim.games.")) == []
    assert "agentsim.analysis.report" not in modules


def test_the_help_lists_every_declared_subcommand_without_importing_its_module() -> None:
    code = ("import sys\nfrom agentsim.cli import build_parser\nhelp = build_parser().format_help()\n"
            "print(sorted(name for name in sys.modules if name.startswith('agentsim.games.')\n"
            "             and name.rpartition('.')[2] in ('commands', 'game', 'report', 'network')))\n"
            "print(all(f'  {name} ' in help for name in ('bias', 'cooperation', 'lineage', 'commons-transcript')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "True"]


def test_declared_names_agree_with_the_code() -> None:
    """A family's `__init__` writes out what it would otherwise import: its scenarios' names,
    its subcommands' summaries, its re-exported names. Each agrees with the modules."""
    import importlib

    discover()
    scenarios = {"commons": ["CommonsGame"], "dilemma": ["PrisonersDilemma"], "evolution": ["DonorGame", "StagHunt"],
                 "naming": ["NamingGame", "NetworkNamingGame", "FirstChoiceProbe", "StrategyProbe"],
                 "sign": ["SignGame"], "theory": ["MinimalNamingGame", "BestResponseNamingGame"]}
    for name, classes in scenarios.items():
        package = importlib.import_module(f"agentsim.games.{name}")
        assert FAMILIES[name].scenario_names == tuple(getattr(package, cls).name for cls in classes)
        for exported in package.__all__:
            assert getattr(package, exported) is not None
    for family in FAMILIES.values():
        if family.commands and family.subcommands:
            declared = {name: SUBCOMMAND_HELP[name] for name in family.subcommands}
            importlib.import_module(family.commands)  # its @command registrations replace the stand-ins
            assert declared == {name: SUBCOMMAND_HELP[name] for name in family.subcommands} == dict(family.subcommands)
            assert not any("_deferred" in SUBCOMMANDS[name].__qualname__ for name in family.subcommands)


def test_a_subcommand_declared_but_never_registered_is_a_bug_said_plainly() -> None:
    from agentsim.analysis.subcommands import declare

    declare("agentsim.errors", {"no-such-subcommand": "declared, never registered"})
    try:
        with pytest.raises(RuntimeError, match="does not register it"):
            SUBCOMMANDS["no-such-subcommand"]([])
    finally:
        SUBCOMMANDS.pop("no-such-subcommand")
        SUBCOMMAND_HELP.pop("no-such-subcommand")


def test_a_family_names_its_checkpoint_classes_as_module_and_class() -> None:
    with pytest.raises(ValueError, match="'module:Class'"):
        agentsim.games.Family(name="bad", summary="", checkpoint_classes=("agentsim.games.naming.network.NetworkMetrics",))


def test_a_name_that_is_also_its_modules_name_stays_the_function() -> None:
    """theory's `best_response` is a function in `best_response.py`: importing that module first
    (as a scenario file may) leaves the package's name the function, as the eager import did."""
    code = ("import inspect\nimport agentsim.games.theory.best_response\n"
            "from agentsim.games.theory import best_response\nprint(inspect.isfunction(best_response))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
