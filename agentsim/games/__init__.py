"""Game families and their registry: the one place the core and the analysis framework learn
which games exist, without importing any of them.

A game family is a package under `agentsim/games/` (naming, sign, commons, evolution, theory,
dilemma) or a third-party package named by an entry point of the group `agentsim.games`. It
owns its rules, prompts, state, metrics and report, and tells the framework about itself once,
from its `__init__`:

    register_family(Family(
        name="dilemma",
        summary="the repeated Prisoner's Dilemma with reputation",
        scenario_names=("prisoners_dilemma",),              # what its runs record as `scenario`
        commands="agentsim.games.dilemma.commands",          # registers its subcommands (imported now: keep it light)
        report_sections=("agentsim.games.dilemma.report",),  # registers its report sections (imported for a report)
        checkpoint_classes=(DilemmaState,),                  # what its checkpoints may hold
    ))

`discover()` imports every family (the subpackages here, then the entry points) once; the
command line's subcommand table (`agentsim.analysis.commands.SUBCOMMANDS`) and the report call
it, so a family's subcommands and sections appear without an edit anywhere else. The
dependency runs one way: a family imports the core and the analysis framework, never the
reverse (tests/test_layers.py checks it), and this module imports neither the analysis
framework nor any family by name.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points

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
    report_sections: tuple[str, ...] = ()
    checkpoint_classes: tuple[type, ...] = ()

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a family's name is an identifier (got {self.name!r})")
        if isinstance(self.scenario_names, str) or isinstance(self.report_sections, str):
            raise ValueError(f"family {self.name}: scenario_names and report_sections are tuples of strings")


FAMILIES: dict[str, Family] = {}
UNAVAILABLE: dict[str, str] = {}  # entry points that failed to import: name -> the error
_discovered = False


def register_family(family: Family) -> Family:
    """Add `family` to the registry: its checkpoint classes become storable and its subcommands
    are registered (its `commands` module imported); its report sections are imported when a
    report is built. Registering a name again replaces it (a module reloaded)."""
    checkpoints.register(*(cls for cls in family.checkpoint_classes if checkpoints.name_of(cls) is None))
    if family.commands:
        importlib.import_module(family.commands)
    FAMILIES[family.name] = family
    return family


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


def report_section_modules() -> list[str]:
    """The modules that register every family's report sections, in family order."""
    return [module for family in discover().values() for module in family.report_sections]
