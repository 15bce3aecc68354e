"""The scenario an experiment or a model plays: loaded from a file, or given as a class or an
object, then changed by `--set KEY=VALUE` pairs or Python values (`scenario_from`).

One step of the one builder of an experiment's configuration (agentsim/configure.py: the command
line, the Python API, `estimate`), and the whole of what Mesa's `PopulationModel(scenario, **params)`
builds, so that each front door reads a scenario and its parameters alike and refuses a bad one
in the same words. The analysis commands load recorded scenarios' files with it too.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ArgumentError, ScenarioFileError, UserError
from .interrupts import Interrupt
from .scenario import GivesScenario, Scenario, as_scenario

# What a front door takes as the scenario: a file's path, a Scenario subclass, or a Scenario object,
# or a game on the layer (agentsim.gamekit: a Game subclass or object, which its engine wraps).
ScenarioSource = str | Path | Scenario[Any, Any, Any] | type[Scenario[Any, Any, Any]] | GivesScenario | type[GivesScenario]
SOURCES = ("a scenario file's path (such as scenarios/naming_game.py), a Scenario class or a Scenario object (such "
           "as NamingGame or NamingGame(agents=24)), or a game on the layer (a Game class or object)")


def scenario_from(source: object, changes: Mapping[str, Any] | None = None) -> tuple[Scenario[Any, Any, Any], Any]:
    """The scenario `source` names (see `ScenarioSource`; a class is built with its defaults)
    with `changes` applied (`with_changes`), and the file's module (None unless it is a file:
    its RUNS, POPULATION and VARIANTS are the builder's to read)."""
    module: Any = None
    if isinstance(source, (str, Path)):
        scenario, module = load_scenario(source)
    elif (made := as_scenario(source)) is not None:  # a Scenario, or a layer game's engine (class or object)
        scenario = made
    else:
        raise ArgumentError(f"scenario takes {SOURCES} (got {type(source).__name__} {source!r:.60})")
    return with_changes(scenario, changes or {}), module


def with_changes(scenario: Scenario[Any, Any, Any], changes: Mapping[str, Any]) -> Scenario[Any, Any, Any]:
    """`scenario` with its parameters and stand-in settings changed: text is read as `--set`
    reads it (`"max_rounds": "30"`), other values are used as they are (`"agents": 12`); a
    stand-in setting is `standin.KEY`, or all of them at once `standin=` (a StandInSettings,
    as Mesa's model parameters give it)."""
    changes = dict(changes)
    settings_object = changes.pop("standin", None)
    if settings_object is not None and settings_object != scenario.standin:  # (then `standin.KEY` changes it)
        if scenario.rule_agents:  # refused as `standin.KEY` is, naming the settings it changes
            given, current = settings_object.as_dict(), scenario.standin.as_dict()
            scenario.with_standin({key: value for key, value in given.items() if current.get(key) != value} or given)
        scenario = type(scenario)(scenario.params, standin=settings_object)
    if not changes:
        return scenario
    texts = {key: value for key, value in changes.items() if isinstance(value, str)}
    return scenario.with_overrides(texts, {key: value for key, value in changes.items() if key not in texts})


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise UserError(f"--set takes KEY=VALUE (got '{pair}')")
        overrides[key.strip()] = value.strip()
    return overrides


def load_scenario(path: str | Path) -> tuple[Scenario[Any, Any, Any], Any]:
    """The scenario a file defines: its `scenario` variable, else its one Scenario object, else
    its one Scenario subclass (built with default parameters)."""
    file = Path(path)
    if not file.is_file():
        raise ScenarioFileError(f"scenario file '{path}' not found; give the path to a scenario file such as scenarios/naming_game.py")
    name = f"agentsim_scenarios.{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ScenarioFileError(f"scenario file '{path}' is not a Python file; give a .py scenario file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its classes are found by name (analyses, a Ray worker's plan)
    # (and so is the package above it, without which pickle cannot import the module by name)
    sys.modules.setdefault("agentsim_scenarios", types.ModuleType("agentsim_scenarios"))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as error:
        raise ScenarioFileError(f"scenario file '{path}' has a syntax error at line {error.lineno}: {error.msg}; fix the file") from None
    except UserError as error:
        raise ScenarioFileError(f"scenario file '{path}': {error}") from None
    except Interrupt:  # a signal the command took while the file loaded: not the file's fault
        raise
    except (SystemExit, KeyboardInterrupt) as error:  # sys.exit() or a raised interrupt in the file: it ran nothing
        said = f": {error}" if str(error) and str(error) != "0" else ""
        raise ScenarioFileError(f"scenario file '{path}' stopped while loading ({type(error).__name__}{said}); a "
                                f"scenario file defines a scenario and must not exit: fix the file") from None
    except Exception as error:  # the file's own code failed: report it as the user's to fix
        raise ScenarioFileError(f"scenario file '{path}' failed to load ({type(error).__name__}: {error}); fix the file") from None
    candidate = getattr(module, "scenario", None)
    if candidate is not None and not isinstance(candidate, type) and as_scenario(candidate) is not None:
        return _built(candidate, path), module
    objects = [value for value in vars(module).values() if not isinstance(value, type) and _scenario_like(value)]
    if len(objects) == 1:
        return _built(objects[0], path), module
    classes = [value for value in vars(module).values()
               if isinstance(value, type) and _scenario_like(value) and value.__module__ == name]
    if not objects and len(classes) == 1:
        return _built(classes[0], path), module
    raise ScenarioFileError(
        f"scenario file '{path}' defines {'several scenarios' if objects or classes else 'no scenario'}; "
        f"assign the one to run to a variable named `scenario`")


def _scenario_like(value: Any) -> bool:
    """A Scenario (object or class), or a game on the layer (one that gives its scenario)."""
    kind = value if isinstance(value, type) else type(value)
    return issubclass(kind, Scenario) or callable(getattr(kind, "__scenario__", None))


def _built(value: Any, path: str | Path) -> Scenario[Any, Any, Any]:
    """The scenario of a file's object or class (built with its defaults); a UserError while
    building it (parameters a class refuses) named with the file."""
    try:
        scenario = as_scenario(value)
    except UserError as error:
        raise ScenarioFileError(f"scenario file '{path}': {error}") from None
    if scenario is None:
        raise ScenarioFileError(f"scenario file '{path}': {value!r} gives no scenario; fix the file")
    return scenario


def file_runs(module: Any, path: str | Path, fix: str) -> int:
    """The file's RUNS (1 without one), checked; `fix` names the caller's way round a bad one."""
    runs = getattr(module, "RUNS", 1)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ScenarioFileError(f"scenario file '{path}': RUNS must be a whole number >= 1 (got {runs!r}); fix the "
                                f"file or {fix}")
    return runs


def file_population(module: Any, path: str | Path, fix: str) -> str | None:
    """The file's POPULATION (None without one), checked; `fix` as for `file_runs`."""
    population = getattr(module, "POPULATION", None)
    if population is not None and not isinstance(population, str):
        raise ScenarioFileError(f"scenario file '{path}': POPULATION must be text like \"openai:gpt-4o-mini=12,"
                                f"anthropic:claude-3-5-haiku-latest=12\" (got {population!r}); fix the file or {fix}")
    return population
