"""Game families and their registry: the one place the core and the analysis framework learn
which games exist, without importing any of them.

A game family is a package under `agentsim/games/` (naming, sign, commons, evolution, theory,
dilemma) or a third-party package named by an entry point of the group `agentsim.games`. It
owns its rules, prompts, state, metrics and report, and tells the framework about itself once,
from its `__init__`:

    register_family(Family(
        name="commons",
        summary="GovSim's commons (Piatti et al. 2024)",
        scenario_names=("commons",),                           # what its runs record as `scenario`
        commands="agentsim.games.commons.commands",            # where its subcommands register ...
        subcommands={"commons-transcript": "a run month by month"},  # ... imported when one runs
        report_sections=("agentsim.games.commons.report",),    # registers its report sections (imported for a report)
        checkpoint_classes=("agentsim.games.commons.state:CommonsState",),  # what its checkpoints may hold
    ))

`discover()` imports every family (the subpackages here, then the entry points) once; the
command line's subcommand table (`agentsim.analysis.commands.SUBCOMMANDS`) and the report call
it, so a family's subcommands and sections appear without an edit anywhere else. The
dependency runs one way: a family imports the core and the analysis framework, never the
reverse (tests/test_layers.py checks it), and this module imports neither the analysis
framework nor any family by name.

Every start of `python -m agentsim` discovers the families (`--help` lists their subcommands),
so a family's `__init__` stays light: it declares, it does not import its game. Its names are
re-exported lazily (`lazy_exports`: `from agentsim.games.naming import NamingGame` imports
`.game` then), its subcommands are declared by name and summary (`subcommands`: the `commands`
module is imported when one of them runs; without `subcommands` it is imported at once, as a
third-party family may expect), and its checkpoint classes may be named as "module:Class"
(imported when a checkpoint holds one: agentsim.checkpoints.register_lazily). A run of the
naming game thus imports no module of another family, and `--help` none of any family
(tests/test_startup.py).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from .. import checkpoints

ENTRY_POINT_GROUP = "agentsim.games"

# Extras a family may need only in part (an optional backend): a missing one does not hide the family.
OPTIONAL_EXTRAS = ("torch", "transformers", "ray", "llama_cpp")


@dataclass(frozen=True, kw_only=True)
class Family:
    """What the framework knows of one game family (see the module's docstring)."""

    name: str
    summary: str
    scenario_names: tuple[str, ...] = ()
    commands: str | None = None
    subcommands: Mapping[str, str] = field(default_factory=dict, hash=False)  # name -> one-line summary, in `commands`
    report_sections: tuple[str, ...] = ()
    checkpoint_classes: tuple[type | str, ...] = ()  # a class, or "module:Class" imported when a checkpoint needs it

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a family's name is an identifier (got {self.name!r})")
        if isinstance(self.scenario_names, str) or isinstance(self.report_sections, str):
            raise ValueError(f"family {self.name}: scenario_names and report_sections are tuples of strings")
        if self.subcommands and not self.commands:
            raise ValueError(f"family {self.name}: subcommands are declared in a `commands` module; name it")
        for entry in self.checkpoint_classes:
            if isinstance(entry, str) and (entry.count(":") != 1 or not all(entry.split(":"))):
                raise ValueError(f"family {self.name}: a checkpoint class named by a string is 'module:Class' "
                                 f"(got {entry!r})")


FAMILIES: dict[str, Family] = {}
UNAVAILABLE: dict[str, str] = {}  # entry points that failed to import: name -> the error
_LISTENERS: list[Callable[[Family], None]] = []
_discovered = False


def register_family(family: Family) -> Family:
    """Add `family` to the registry: its checkpoint classes become storable (those named by a
    string when a checkpoint first needs one) and its subcommands are registered (declared ones
    by `agentsim.analysis.commands`, their `commands` module imported when one runs; without
    declared ones, that module now); its report
    sections are imported when a report is built. Registering a name again replaces it (a module
    reloaded)."""
    checkpoints.register(*(cls for cls in family.checkpoint_classes
                           if not isinstance(cls, str) and checkpoints.name_of(cls) is None))
    checkpoints.register_lazily(*(path for path in family.checkpoint_classes if isinstance(path, str)))
    if family.commands and not family.subcommands:
        importlib.import_module(family.commands)
    FAMILIES[family.name] = family
    for listener in _LISTENERS:  # the subcommand table, once built: a notebook's own family joins it now
        listener(family)
    return family


def on_register(listener: Callable[[Family], None]) -> None:
    """Call `listener` with every family registered so far and every one registered later: how
    the subcommand table (agentsim/analysis/commands.py, a layer above) learns of families
    without this registry importing it."""
    _LISTENERS.append(listener)
    for family in list(FAMILIES.values()):
        listener(family)


def discover() -> dict[str, Family]:
    """Import every game family once (each registers itself) and return the registry: the
    subpackages of `agentsim.games`, then the packages named by `agentsim.games` entry points.
    An entry point that fails to import is left out (`UNAVAILABLE`) with one line on stderr: a
    broken third-party package must not stop every command; a broken built-in family raises."""
    global _discovered
    if _discovered:
        return FAMILIES
    _discovered = True
    for found in pkgutil.iter_modules(__path__):
        if found.ispkg:
            try:
                importlib.import_module(f"{__name__}.{found.name}")
            except ModuleNotFoundError as error:
                if error.name not in OPTIONAL_EXTRAS:
                    raise  # a broken built-in family must not vanish unnoticed
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry_point.load()
        except Exception as error:  # another distribution's bug: agentsim goes on without that family, and says so
            UNAVAILABLE[entry_point.name] = f"{type(error).__name__}: {error}"
            print(f"agentsim: the game family '{entry_point.name}' ({entry_point.value}, an '{ENTRY_POINT_GROUP}' entry "
                  f"point) fails to import ({UNAVAILABLE[entry_point.name]}); going on without it: fix or uninstall its "
                  f"package", file=sys.stderr)
            continue
        if isinstance(loaded, Family) and loaded.name not in FAMILIES:
            register_family(loaded)
    return FAMILIES


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]]) -> None:
    """Make the family package `package` import a re-exported name's module when the name is
    first read (`exports` maps a relative module, ".game", to its names). The registry imports
    every family's package to list its subcommands; only what a run or a command uses is
    imported beyond that (the package names them for type checkers under TYPE_CHECKING)."""
    module = sys.modules[package]
    module.__class__ = _LazyPackage  # the data model's way to give a module __getattr__ and __setattr__
    module.__dict__["_lazy_exports"] = {name: relative for relative, names in exports.items() for name in names}


class _LazyPackage(types.ModuleType):
    """A family package with lazily re-exported names (`lazy_exports`)."""

    _lazy_exports: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        relative = self.__dict__.get("_lazy_exports", {}).get(name)
        if relative is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(relative, self.__name__), name)
        super().__setattr__(name, value)  # read once: the next read is a plain attribute
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        """A submodule named as one of its own names (theory's `best_response`): importing it
        binds the package's name to the module; the eager `from .best_response import
        best_response` rebound it to the function, and so does this."""
        exports = self.__dict__.get("_lazy_exports", {})
        if (isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}"
                and exports.get(name) == f".{name}"):
            value = getattr(value, name)
        super().__setattr__(name, value)


def report_section_modules() -> list[str]:
    """The modules that register every family's report sections, in family order."""
    return [module for family in discover().values() for module in family.report_sections]
