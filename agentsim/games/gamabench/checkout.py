"""The user's own GAMA-Bench checkout, read as data: its prompt templates and the texts its
runner writes itself (the answer formats, a round's result sentences), for GAMA-Bench-exact
mode (exact.py).

GAMA-Bench is GPL-3.0 and none of its text is in agentsim: the templates are read from the
checkout's `prompt_template/` folder, and the runner's own sentences from its `games/*.py`,
parsed with `ast` and never imported or run. A sentence is an expression the runner assigns
to a name in one of its methods (`output_format` in `start`); `RunnerSource.value` evaluates
such an expression over the runner's own variable names, allowing only literals, f-strings,
names, subscripts, comparisons, conditional expressions, string `+` and `.format`, and the
calls agentsim hands it by name: nothing else in the file is evaluated.

`Checkout(templates, revision)` reads the working tree, or with `revision` that commit of
the checkout's git history (`git show REV:PATH`): GAMA-Bench's published runs were made over
a year of its history, and `reenact` plays each with the texts of the commit that made it.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import UserError
from .templates import MAX_TEMPLATE_BYTES, VERSIONS, PromptTemplate, parse_template

MAX_SOURCE_BYTES = 1024 * 1024


class Checkout:
    """A GAMA-Bench checkout: `templates` is its `prompt_template/` folder (the folder above
    holds `games/`); `revision` a commit of its git history ("" the files as they are)."""

    def __init__(self, templates: Path | str, revision: str = "") -> None:
        self.templates = Path(templates)
        self.root = self.templates.parent
        self.revision = revision
        self._runners: dict[str, RunnerSource] = {}
        if not self.templates.is_dir():
            raise UserError(f"'{templates}' is not a directory; give the prompt_template/ folder of a GAMA-Bench checkout")

    def __repr__(self) -> str:
        return f"Checkout({str(self.templates)!r}, {self.revision!r})"

    def text(self, relative: str, limit: int = MAX_TEMPLATE_BYTES) -> str:
        """A file of the checkout (a path relative to its root), as text."""
        return _read(str(self.root.resolve()), self.templates.name, self.revision, relative, limit)

    def template(self, game: str, kind: str, version: str) -> PromptTemplate:
        if version not in VERSIONS:
            raise UserError(f"prompt version '{version}' is not one of {', '.join(VERSIONS)}")
        path = f"{self.templates.name}/{game}/{kind}_{version}.txt"
        return parse_template(path, self.text(path))

    def extra(self, folder: str, name: str) -> PromptTemplate:
        """One of the templates the runner adds to others (`cot_prompts/cot1.txt`, `role_prompts/role2.txt`)."""
        path = f"{self.templates.name}/{folder}/{name}.txt"
        return parse_template(path, self.text(path))

    def runner(self, game: str) -> RunnerSource:
        """The runner of `game` (`games/GAME.py`), parsed."""
        if game not in self._runners:
            path = f"games/{game}.py"
            self._runners[game] = RunnerSource(self.text(path, MAX_SOURCE_BYTES), f"{self.root}/{path}"
                                               + (f" at {self.revision}" if self.revision else ""))
        return self._runners[game]

    def revisions(self, *paths: str) -> list[str]:
        """The commits of the checkout's history that changed any of `paths`, newest first (empty
        where the checkout is no git repository)."""
        if not (self.root / ".git").exists():
            return []
        done = subprocess.run(["git", "-C", str(self.root), "log", "--format=%H", "--", *paths],
                              capture_output=True, text=True, timeout=60, check=False)
        return done.stdout.split() if done.returncode == 0 else []

    def signature(self, revision: str, paths: list[str]) -> str:
        """What `paths` hold at `revision` (their git object ids): equal signatures, equal texts."""
        done = subprocess.run(["git", "-C", str(self.root), "ls-tree", "-r", revision, "--", *paths],
                              capture_output=True, text=True, timeout=60, check=False)
        return done.stdout if done.returncode == 0 else ""

    def at(self, revision: str) -> Checkout:
        return Checkout(self.templates, revision)


@lru_cache(maxsize=4096)
def _read(root: str, folder: str, revision: str, relative: str, limit: int) -> str:
    where = f"{root}/{relative}" + (f" at {revision}" if revision else "")
    if revision:
        done = subprocess.run(["git", "-C", root, "show", f"{revision}:{relative}"], capture_output=True, timeout=60,
                              check=False)
        if done.returncode != 0:
            raise UserError(f"no '{relative}' at revision {revision} of the GAMA-Bench checkout {root}; name a commit of "
                            f"its history that has it")
        data = done.stdout
    else:
        path = Path(root) / relative
        if not path.is_file():
            raise UserError(f"no '{where}'; point prompt_templates at the {folder}/ folder of a GAMA-Bench checkout "
                            f"(beside it: games/, its runner)")
        if path.stat().st_size > limit:
            raise UserError(f"'{where}' is larger than {limit >> 10} KiB, not a GAMA-Bench file")
        data = path.read_bytes()
    if len(data) > limit:
        raise UserError(f"'{where}' is larger than {limit >> 10} KiB, not a GAMA-Bench file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"'{where}' is not UTF-8 text, not a GAMA-Bench file") from None


class RunnerSource:
    """A runner file of GAMA-Bench (`games/GAME.py`), parsed with `ast` (never run): the
    expressions its methods assign to a name, and their values over given variables."""

    def __init__(self, source: str, where: str) -> None:
        self.where = where
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            raise UserError(f"{where}: not Python agentsim can read ({error.msg}, line {error.lineno})") from None
        self.methods: dict[str, ast.FunctionDef] = {}
        self.found: dict[tuple[str, str], list[ast.expr]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        self.methods.setdefault(item.name, item)

    def assigned(self, method: str, name: str) -> list[ast.expr]:
        """The expressions `method` assigns (or adds with `+=`) to `name`, in the file's order."""
        if (method, name) not in self.found:
            self.found[method, name] = self._assigned(method, name)
        return self.found[method, name]

    def _assigned(self, method: str, name: str) -> list[ast.expr]:
        function = self.methods.get(method)
        if function is None:
            raise UserError(f"{self.where}: no method '{method}'; GAMA-Bench-exact mode reads the runner as published")
        found: list[tuple[int, int, ast.expr]] = []
        for node in ast.walk(function):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
            if any(isinstance(target, ast.Name) and target.id == name for target in targets):
                found.append((node.lineno, node.col_offset, node.value))  # type: ignore[attr-defined]
        return [value for _, _, value in sorted(found, key=lambda item: item[:2])]

    def expression(self, method: str, name: str, index: int, count: int | None = None) -> ast.expr:
        """The `index`-th expression `method` assigns to `name` (of `count`, where the runner's
        shape is known: another count is refused in one line)."""
        found = self.assigned(method, name)
        if (count is not None and len(found) != count) or not -len(found) <= index < len(found):
            raise UserError(f"{self.where}: '{method}' assigns '{name}' {len(found)} times, not {count or index + 1}; "
                            f"GAMA-Bench-exact mode reads the runner as published (point prompt_templates at such a "
                            f"checkout)")
        return found[index]

    def value(self, node: ast.expr, names: Mapping[str, Any]) -> Any:
        """`node` evaluated over `names` (the runner's variables by dotted name: "self.min",
        "round_record", "self.ordinal" for a function agentsim hands over)."""
        return _Evaluator(names, self.where).run(node)

    def text(self, method: str, name: str, index: int, names: Mapping[str, Any], count: int | None = None) -> str:
        return str(self.value(self.expression(method, name, index, count), names))

    def dictionary(self, method: str) -> ast.Dict:
        """The one dict display `method` builds (Battle Royale's player list entry)."""
        function = self.methods.get(method)
        found = [node for node in ast.walk(function) if isinstance(node, ast.Dict)] if function else []
        if len(found) != 1:
            raise UserError(f"{self.where}: '{method}' does not build one dict; GAMA-Bench-exact mode reads the runner "
                            f"as published")
        return found[0]


class _Evaluator:
    def __init__(self, names: Mapping[str, Any], where: str) -> None:
        self.names = names
        self.where = where

    def refuse(self, node: ast.AST) -> UserError:
        return UserError(f"{self.where}, line {getattr(node, 'lineno', '?')}: a {type(node).__name__} agentsim does not "
                         f"evaluate in a runner's text")

    def dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        return None

    def run(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(str(self.run(value)) for value in node.values)
        if isinstance(node, ast.FormattedValue):
            value = self.run(node.value)
            if node.conversion == ord("r"):
                value = repr(value)
            elif node.conversion == ord("s"):
                value = str(value)
            elif node.conversion == ord("a"):
                value = ascii(value)
            spec = self.run(node.format_spec) if node.format_spec is not None else ""
            return format(value, spec)
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = self.dotted(node)
            if name is None or name not in self.names:
                raise UserError(f"{self.where}, line {node.lineno}: the runner's text reads '{name}', which agentsim does "
                                f"not give it; GAMA-Bench-exact mode reads the runner as published")
            return self.names[name]
        if isinstance(node, ast.Subscript):
            return self.run(node.value)[self.run(node.slice)]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.run(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            left, right = self.run(node.left), self.run(node.right)
            return left + right if isinstance(node.op, ast.Add) else left - right
        if isinstance(node, ast.IfExp):
            return self.run(node.body) if self.run(node.test) else self.run(node.orelse)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right, op = self.run(node.left), self.run(node.comparators[0]), node.ops[0]
            comparisons: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
                ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
                ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
            if type(op) in comparisons:
                return comparisons[type(op)](left, right)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "format" and isinstance(node.func.value, ast.Constant) \
                    and isinstance(node.func.value.value, str) and not node.args:
                return node.func.value.value.format(**{keyword.arg: self.run(keyword.value) for keyword in node.keywords
                                                       if keyword.arg})
            name = self.dotted(node.func)
            if name is not None and callable(self.names.get(name)) and not node.keywords:
                return self.names[name](*(self.run(argument) for argument in node.args))
        if isinstance(node, ast.Dict):
            return {self.run(key) if key is not None else None: self.run(value) for key, value in zip(node.keys, node.values)}
        raise self.refuse(node)
