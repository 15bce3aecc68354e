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
from typing import Any

import pytest
from helpers import ROOT

import agentsim.games
from agentsim.analysis.commands import SUBCOMMAND_HELP, SUBCOMMANDS
from agentsim.games import FAMILIES, discover

HEAVY = ("matplotlib", "openai", "anthropic", "torch", "transformers", "llama_cpp", "ray", "httpx")
OTHER_FAMILIES = ("commons", "dilemma", "evolution", "sign", "theory")

# In one fresh interpreter: `--help` (every declared subcommand listed), then a naming run built
# as the command line builds it (its scenario loaded, its backends and store opened: everything
# but the run) on a TGI server and a local OpenAI-compatible one, then theory's `best_response`
# read after its module was imported first (as a scenario file may).
PROBE = """
import inspect, json, sys
from agentsim import cli
text = cli.build_parser().format_help()
seen = {"help_lists": all(f"  {name} " in text for name in ("bias", "cooperation", "lineage", "commons-transcript")),
        "help_modules": sorted(sys.modules)}
options = cli.build_parser().parse_args([sys.argv[1], "--population",
    "tgi:http://127.0.0.1:9=2,openai:small@http://127.0.0.1:9/v1=2", "--no-live", "--no-cache", "--out", sys.argv[2],
    "--set", "agents=4"])
experiment = cli._prepare(options)
experiment.lock.release()
seen["run_modules"] = sorted(sys.modules)
import agentsim.games.theory.best_response
from agentsim.games.theory import best_response
seen["best_response_is_the_function"] = inspect.isfunction(best_response)
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    environment = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    result = subprocess.run([sys.executable, "-c", PROBE, str(ROOT / "scenarios" / "naming_game.py"),
                             str(tmp_path_factory.mktemp("startup") / "out")],
                            capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def _family_modules(modules: list[str], families: tuple[str, ...]) -> list[str]:
    """The modules of these families beyond their (declaring) packages."""
    return sorted(name for name in modules for family in families if name.startswith(f"agentsim.games.{family}."))


def test_a_naming_run_imports_no_other_game_no_subcommand_no_sdk_and_no_figures(seen: dict[str, Any]) -> None:
    modules = set(seen["run_modules"])
    assert {"agentsim.games.naming.game", "agentsim.llm.tgi", "agentsim.llm.openai_http"} <= modules  # it was built
    assert [name for name in HEAVY if name in modules] == []
    assert _family_modules(seen["run_modules"], OTHER_FAMILIES) == []
    assert sorted(name for name in modules if name.endswith(".commands") and name.startswith("agentsim.games.")) == []
    assert "agentsim.analysis.report" not in modules


def test_the_help_lists_every_declared_subcommand_without_importing_a_game(seen: dict[str, Any]) -> None:
    assert seen["help_lists"]
    assert _family_modules(seen["help_modules"], ("naming", *OTHER_FAMILIES)) == ["agentsim.games.naming.reference"]
    assert [name for name in ("mesa", *HEAVY) if name in seen["help_modules"]] == []


def test_a_name_that_is_also_its_modules_name_stays_the_function(seen: dict[str, Any]) -> None:
    """theory's `best_response` is a function in `best_response.py`: importing that module first
    leaves the package's name the function, as the eager from-import did."""
    assert seen["best_response_is_the_function"]


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

