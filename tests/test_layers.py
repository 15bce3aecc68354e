"""The package's layers. The framework (the core: `agentsim/*.py`, `agentsim/llm`,
`agentsim/distributed`, `agentsim/prompts`; the analysis framework `agentsim/analysis`; and the
registry of families, the module `agentsim.games`) imports no game: a game family is a package
under `agentsim/games/` that imports the framework and registers itself. Checked on the source
(every import statement, those inside functions and under TYPE_CHECKING included), so an import
that runs only on one path cannot slip through."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import agentsim
import agentsim.analysis

PACKAGE = Path(agentsim.__file__).parent
REGISTRY = "agentsim.games"
FRAMEWORK = "framework"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    place = PACKAGE.parent.joinpath(*name.split("."))
    return place.with_suffix(".py").is_file() or (place / "__init__.py").is_file()


def _imports(path: Path) -> set[str]:
    name = _module_name(path)
    return _imports_of(path.read_text(encoding="utf-8"), name if path.name == "__init__.py" else name.rpartition(".")[0])


def _imports_of(source: str, package: str) -> set[str]:
    """Every agentsim module `source` (a module of `package`) imports, relative imports resolved;
    `from X import Y` counts as importing X.Y when that is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if _is_module(f"{base}.{alias.name}"))
    return {module for module in found if module == "agentsim" or module.startswith("agentsim.")}


def _unit(module: str) -> str:
    """The layer a module belongs to: the framework, or one package (or module) of agentsim/games."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "games":
        return ".".join(parts[:3])
    return FRAMEWORK


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_framework_imports_no_game_family() -> None:
    wrong = [f"{path.relative_to(PACKAGE.parent)} imports {module}"
             for path in _sources() if _unit(_module_name(path)) == FRAMEWORK
             for module in sorted(_imports(path)) if _unit(module) != FRAMEWORK]
    assert wrong == []


def test_the_check_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    """The rule above must be able to fail: imports hidden in a function or under TYPE_CHECKING are found."""
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from ..games import sign\n"
              "def late() -> None:\n    from ..games.naming import NamingGame\n")
    found = _imports_of(source, "agentsim.analysis")
    assert {"agentsim.games.naming", "agentsim.games.sign"} <= found
    assert {_unit(module) for module in found} - {FRAMEWORK} == {"agentsim.games.naming", "agentsim.games.sign"}


def test_no_import_cycle_between_layers() -> None:
    """Between the framework and each package of agentsim/games, the imports form no cycle: a
    family may build on another (SIGN and the theory baselines on the naming game), never both ways."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in _sources():
        unit = _unit(_module_name(path))
        graph[unit].update(other for other in map(_unit, _imports(path)) if other != unit)
    assert _cycles({"naming": {"theory"}, "theory": {"naming"}, "sign": {"naming"}}) == ["naming -> theory -> naming",
                                                                                        "theory -> naming -> theory"]
    assert _cycles(graph) == []


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """Each cycle through each node (as `a -> b -> a`), found by a walk from every node."""
    cycles = []
    for start in graph:
        stack, seen = [(start, (start,))], set()
        while stack:
            node, trail = stack.pop()
            for following in graph.get(node, ()):
                if following == start:
                    cycles.append(" -> ".join((*trail, start)))
                elif following not in seen:
                    seen.add(following)
                    stack.append((following, (*trail, following)))
    return cycles


def test_no_analysis_module_imports_the_command_line_and_every_built_in_family_registers_itself() -> None:
    modules = [f"agentsim.analysis.{info.name}" for info in pkgutil.iter_modules(agentsim.analysis.__path__)]
    assert "agentsim.analysis.commands" in modules  # importing it discovers the families
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "from agentsim.games import FAMILIES\n"
            "print('agentsim.cli' in sys.modules, ' '.join(sorted(FAMILIES)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    cli_loaded, *families = result.stdout.split()
    assert cli_loaded == "False"
    packages = {info.name for info in pkgutil.iter_modules([str(PACKAGE / "games")]) if info.ispkg}
    assert set(families) == packages
