"""The package's layers. The framework (the core: `agentsim/*.py`, `agentsim/llm`,
`agentsim/distributed`, `agentsim/prompts`; the analysis framework `agentsim/analysis`; and the
registry of families, the module `agentsim.games`) imports no game: a game family is a package
under `agentsim/games/` that imports the framework and registers itself. Within the framework,
each module has a layer (`LAYERS`, low to high: base, llm, core, session, runs, configuration,
analysis, commands, front; drawn in docs/architecture.md) and imports only its own and those
below, and no import closes a cycle between two of its modules. Checked on the source (every
import statement, those inside functions and under TYPE_CHECKING included), so an import that
runs only on one path cannot slip through."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

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
            modules = {f"{base}.{alias.name}" for alias in node.names if _is_module(f"{base}.{alias.name}")}
            found.update(modules)
            if len(modules) < len(node.names):  # `from . import event_loop` imports the module, not the package's names
                found.add(base)
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


def test_the_llm_layer_knows_requests_and_replies_not_scenarios() -> None:
    """Nothing in agentsim/llm imports agentsim.scenario (under TYPE_CHECKING neither): a backend
    is built from its spec and options, the stand-in from the rules it is handed."""
    wrong = [f"{path.relative_to(PACKAGE.parent)} imports {module}"
             for path in sorted((PACKAGE / "llm").rglob("*.py"))
             for module in sorted(_imports(path)) if module == "agentsim.scenario" or module.startswith("agentsim.scenario.")]
    assert wrong == []
    hidden = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..scenario import Scenario\n"
    assert "agentsim.scenario" in _imports_of(hidden, "agentsim.llm")


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


# --- the framework's layers, low to high ----------------------------------------------------------
# Each framework module belongs to one layer (a name matches its longest prefix here); an import,
# at import time, under TYPE_CHECKING or inside a function, goes to its own layer or one below.
# Game families (agentsim/games/<family>) are checked by the family rules above and below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("agentsim.version", "agentsim.errors", "agentsim.params", "agentsim.secrets", "agentsim.seeding",
              "agentsim.interrupts", "agentsim.event_loop", "agentsim.blocking", "agentsim.checkpoints",
              "agentsim.collection", "agentsim.sqlite_reading", "agentsim.staging")),
    ("llm", ("agentsim.llm",)),
    ("core", ("agentsim.scenario", "agentsim.scenario_files", "agentsim.codec", "agentsim.parts", "agentsim.figures", "agentsim.views",
              "agentsim.model", "agentsim.agents", "agentsim.policies", "agentsim.scheduler", "agentsim.records",
              "agentsim.topology", "agentsim.usage", "agentsim.store", "agentsim.store_layout", "agentsim.tables", "agentsim.flat",
              "agentsim.summaries", "agentsim.prompts", "agentsim.variants", "agentsim.model_fitness",
              "agentsim.progress", "agentsim.gamekit", "agentsim.games", "agentsim.batch_run",
              "agentsim.estimate_file")),
    ("session", ("agentsim.session",)),
    ("runs", ("agentsim.replicates", "agentsim.executors", "agentsim.distributed", "agentsim.runner", "agentsim.live",
              "agentsim.notebook")),
    ("configuration", ("agentsim.configure",)),
    ("analysis", ("agentsim.analysis", "agentsim.results", "agentsim.estimate", "agentsim.watch", "agentsim.viz")),
    ("commands", ("agentsim.analysis.subcommands", "agentsim.analysis.commands", "agentsim.flags")),
    ("front", ("agentsim.cli", "agentsim.api", "agentsim.__main__", "agentsim")),
)
_LEVEL = {prefix: level for level, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes}
_EXACT = ("agentsim", "agentsim.games")  # the package itself (the front's lazy names) and the family registry


def _layer(module: str) -> int | None:
    """The layer of a framework module (its longest prefix in LAYERS); None for a game family's."""
    if _unit(module) != FRAMEWORK:
        return None
    matches = [prefix for prefix in _LEVEL if module == prefix
               or (prefix not in _EXACT and module.startswith(prefix + "."))]
    if not matches:
        raise AssertionError(f"{module} is in no layer of tests/test_layers.py's LAYERS: place it")
    return _LEVEL[max(matches, key=len)]


def _upward(sources: list[tuple[str, str, str]]) -> list[str]:
    """Each import (module, source text, package) of a framework module that reaches a layer above its own."""
    wrong = []
    for module, source, package in sources:
        own = _layer(module)
        if own is None:
            continue
        for imported in sorted(_imports_of(source, package)):
            level = _layer(imported)
            if level is not None and level > own:
                wrong.append(f"{module} ({LAYERS[own][0]}) imports {imported} ({LAYERS[level][0]})")
    return wrong


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def test_every_framework_module_has_a_layer_and_imports_only_downward() -> None:
    """No module imports a module above it, at import time or inside a function: the analyses
    never import the command line, the session never imports a command, the core never a run."""
    sources = [(_module_name(path), path.read_text(encoding="utf-8"), _package_of(path)) for path in _sources()]
    assert _upward(sources) == []


def test_the_layer_check_sees_an_import_hidden_in_a_function() -> None:
    """It must be able to fail: the session importing a command inside a method, the analysis the
    command line inside a function, are both found."""
    session = "class Session:\n    def open(self) -> None:\n        from .estimate import read\n"
    analysis = "def estimate_command() -> None:\n    from ..cli import build_parser\n"
    assert _upward([("agentsim.session", session, "agentsim"), ("agentsim.analysis.commands", analysis, "agentsim.analysis")]) == [
        "agentsim.session (session) imports agentsim.estimate (analysis)",
        "agentsim.analysis.commands (commands) imports agentsim.cli (front)"]


def _run_time_imports_of(source: str, package: str) -> set[str]:
    """`_imports_of`, leaving out what is imported under TYPE_CHECKING (names for the type checker
    only: never run)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = [ast.Pass()]
    return _imports_of(ast.unparse(tree), package)


def test_no_cycle_between_framework_modules_inside_functions_included() -> None:
    """The front modules once imported each other inside functions (cli, api, session, runner,
    batch_run, estimate, results, analysis/commands, distributed/*: a knot of 15); no import, at
    import time or inside a function, closes a cycle between two modules of the framework."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in _sources():
        module = _module_name(path)
        if _unit(module) == FRAMEWORK and module != "agentsim":
            graph[module].update(other for other in _run_time_imports_of(path.read_text(encoding="utf-8"), _package_of(path))
                                 if _unit(other) == FRAMEWORK and other not in (module, "agentsim"))
    assert _cycles(graph) == []
    knot = {"agentsim.session": "def open() -> None:\n    from .estimate import read\n",
            "agentsim.estimate": "from .session import run_cell\n"}
    found = {name: _run_time_imports_of(source, "agentsim") for name, source in knot.items()}
    assert _cycles(found) == ["agentsim.session -> agentsim.estimate -> agentsim.session",
                              "agentsim.estimate -> agentsim.session -> agentsim.estimate"]
    assert _run_time_imports_of("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .x import Y\n",
                                "agentsim") == set()


LAZY = re.compile(r"# lazy: \S")  # why an import of agentsim's own stays inside a function


def _unexplained_lazy_imports(source: str, package: str) -> list[int]:
    """The line of each import of an agentsim module inside a function that does not say why it
    is not at the top: a `# lazy: WHY` comment on its line, or on the line above it (above the
    block of imports it is part of)."""
    lines = source.splitlines()
    found: set[int] = set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or not _imports_of(ast.unparse(node), package):
                continue
            said = any(LAZY.search(line) for line in lines[node.lineno - 1: node.end_lineno])
            above = node.lineno - 2
            while not said and above >= 0:
                said = bool(LAZY.search(lines[above]))
                if not lines[above].strip().startswith(("from ", "import ")):
                    break
                above -= 1
            if not said:
                found.add(node.lineno)
    return sorted(found)


def test_every_import_inside_a_function_says_why_it_is_not_at_the_top() -> None:
    """An import of agentsim's own modules belongs at the top of the module; one that stays in a
    function (start-up time: Mesa, matplotlib, rich; an optional extra: Ray, llama.cpp, an SDK; a
    registration that must not happen at import) says so in a `# lazy:` comment, so that none
    comes back without a reason."""
    wrong = [f"{path.relative_to(PACKAGE.parent)}:{line}" for path in _sources()
             for line in _unexplained_lazy_imports(path.read_text(encoding="utf-8"), _package_of(path))]
    assert wrong == []
    sample = ("import json\n"
              "def said() -> None:\n    from .model import PopulationModel  # lazy: Mesa, only for a run\n"
              "def block() -> None:\n    # lazy: matplotlib, only for a report\n    from .report import a\n"
              "    from .figures import b\n"
              "def unsaid() -> None:\n    x = 1\n    from .store import Store\n    import json\n"
              "def other() -> None:\n    from json import dumps  # lazy: not ours, so not asked\n")
    assert _unexplained_lazy_imports(sample, "agentsim") == [10]


def test_no_game_family_imports_the_front() -> None:
    """A family's commands build on the analysis framework and the runner, never on the command
    line or the Python API (which import them)."""
    front = len(LAYERS) - 1
    wrong = [f"{path.relative_to(PACKAGE.parent)} imports {module}" for path in _sources()
             if _unit(_module_name(path)) != FRAMEWORK for module in sorted(_imports(path)) if _layer(module) == front]
    assert wrong == []


# --- the size and the types of the core --------------------------------------------------------
MAX_METHODS = 25
CORE_PARTS = ("analysis", "llm", "distributed", "gamekit")  # beside agentsim/*.py (gamekit: the game layer, whose Game is a Scenario)
SEAM_MODULES = ("scheduler.py", "policies.py")


def _core_sources() -> list[Path]:
    return sorted(PACKAGE.glob("*.py")) + [path for part in CORE_PARTS for path in sorted((PACKAGE / part).rglob("*.py"))]


def _method_counts(source: str) -> dict[str, int]:
    """Each class of `source` (nested ones too) and how many methods its body defines."""
    return {node.name: sum(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) for item in node.body)
            for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)}


def test_no_class_of_the_core_has_more_than_25_methods() -> None:
    """A class of the core short enough to read in one sitting: `Scenario` is the rules only
    (prompts are the codec's, agentsim/codec.py), and the run's pieces are their own classes."""
    wrong = [f"{path.relative_to(PACKAGE.parent)}: {name} has {count} methods"
             for path in _core_sources() for name, count in _method_counts(path.read_text(encoding="utf-8")).items()
             if count > MAX_METHODS]
    assert wrong == []
    assert _method_counts("class Big:\n" + "".join(f"    def m{i}(self): ...\n" for i in range(26)))["Big"] == 26


def _public_annotations(source: str) -> list[tuple[str, ast.expr]]:
    """Every annotation in the public signatures of a module: its public functions' and public
    classes' public methods' parameters and returns (constructors included), its public classes'
    annotated attributes, and its public type aliases."""
    found: list[tuple[str, ast.expr]] = []

    def function(node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str) -> None:
        if node.name.startswith("_") and node.name != "__init__":
            return
        arguments = node.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
            if argument is not None and argument.annotation is not None:
                found.append((f"{owner}{node.name}({argument.arg})", argument.annotation))
        if node.returns is not None:
            found.append((f"{owner}{node.name} -> ", node.returns))

    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function(node, "")
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    function(item, f"{node.name}.")
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and not item.target.id.startswith("_"):
                    found.append((f"{node.name}.{item.target.id}", item.annotation))
        elif isinstance(node, ast.Assign) and all(isinstance(target, ast.Name) and not target.id.startswith("_")
                                                  and target.id[:1].isupper() for target in node.targets):
            found.extend((target.id, node.value) for target in node.targets if isinstance(target, ast.Name))
    return found


def _says_any(annotation: ast.expr) -> bool:
    """Whether `Any` (or `typing.Any`) appears in an annotation, quoted parts included."""
    for node in ast.walk(annotation):
        if (isinstance(node, ast.Name) and node.id == "Any") or (isinstance(node, ast.Attribute) and node.attr == "Any"):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _says_any(ast.parse(node.value, mode="eval").body):
            return True
    return False


def test_any_is_absent_from_the_public_signatures_of_the_scheduler_and_the_policies() -> None:
    """The seam between the core and a game is typed: encounters are generic over what the game
    drew and shows, policies over the situation they decide on."""
    wrong = [f"{module}: {where}" for module in SEAM_MODULES
             for where, annotation in _public_annotations((PACKAGE / module).read_text(encoding="utf-8"))
             if _says_any(annotation)]
    assert wrong == []
    sample = ("from typing import Any\n"
              "Alias = tuple[Any, ...]\n"
              "class Thing:\n    field: 'dict[str, Any]'\n    def go(self, x: int) -> list[Any]: ...\n"
              "    def _private(self, x: Any) -> None: ...\n"
              "def run(*, y: typing.Any) -> None: ...\n")
    assert [where for where, annotation in _public_annotations(sample) if _says_any(annotation)] == [
        "Alias", "Thing.field", "Thing.go -> ", "run(y)"]


def test_a_scenario_overriding_a_hook_that_moved_is_refused_not_ignored() -> None:
    """A hook overridden on a scenario that the scenario no longer has (a prompt hook, now the
    codec's; a stand-in or presentation hook, now a part's: agentsim/parts.py) would change
    nothing: it is refused when the class is made, naming where the hook lives now."""
    from agentsim.games.naming import NamingGame

    with pytest.raises(TypeError, match=r"overrides messages, parse.*subclass the game's codec"):
        type("Old", (NamingGame,), {"messages": lambda self, situation: (), "parse": lambda self, text, situation: None})
    with pytest.raises(TypeError, match="subclass Readout"):
        type("Older", (NamingGame,), {"live_metrics": lambda self, model: {}})
    for hook in ("live_figures", "model_series", "run_summary"):
        with pytest.raises(TypeError, match=rf"overrides {hook}, which a scenario no longer has: .*return it from `readout`"):
            type("Shown", (NamingGame,), {hook: lambda self, model: {}})
    with pytest.raises(TypeError, match=r"overrides standin_ignores, standin_rules, .*`standin_part` \(agentsim/parts.py\)"):
        type("Answered", (NamingGame,), {"standin_rules": lambda self: [], "standin_ignores": lambda self: ()})
    type("Fine", (NamingGame,), {"prompt_fields": lambda self: {}, "readout": lambda self: None})


def _untyped_state_reads(source: str) -> list[str]:
    """Each function of `source` that reads `model.state` while its `model` parameter is not
    annotated `PopulationModel[...]` (the state's type)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        model = next((argument for argument in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
                      if argument.arg == "model"), None)
        reads = any(isinstance(inner, ast.Attribute) and inner.attr == "state" and isinstance(inner.value, ast.Name)
                    and inner.value.id == "model" for inner in ast.walk(node))
        annotation = model.annotation if model is not None else None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.parse(annotation.value, mode="eval").body
        typed = isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) \
            and annotation.value.id == "PopulationModel"
        if reads and not typed:
            found.append(node.name)
    return found


def test_model_state_is_read_typed() -> None:
    """`PopulationModel` is generic over the run's state: a hook that reads `model.state` takes
    `PopulationModel[ItsState]`, so mypy checks what it reads (no `Any` from the model)."""
    wrong = [f"{path.relative_to(PACKAGE.parent)}: {name}" for path in _sources()
             for name in _untyped_state_reads(path.read_text(encoding="utf-8"))]
    assert wrong == []
    sample = ("def typed(model: PopulationModel[State]) -> None:\n    model.state.month\n"
              "def loose(model: PopulationModel) -> None:\n    model.state.month\n"
              "def elsewhere(model: PopulationModel) -> None:\n    model.metrics\n")
    assert _untyped_state_reads(sample) == ["loose"]
