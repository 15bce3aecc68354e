"""The size of the house: lines of code per layer (the layers of docs/architecture.md, as
tests/test_layers.py's `LAYERS` places each module; game families apart), the largest classes
by methods, and the imports of agentsim's own modules made inside functions.

    python benchmarks/code_size.py [--top 12]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_layers import LAYERS, _layer, _module_name, _sources


def _lines(source: str) -> int:
    """Lines that are not blank."""
    return sum(1 for line in source.splitlines() if line.strip())


def _function_imports(tree: ast.Module) -> int:
    """Import statements of agentsim's own modules inside functions (each counted once)."""
    found = set()
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if (isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("agentsim"))) or (
                        isinstance(node, ast.Import) and any(alias.name.startswith("agentsim") for alias in node.names)):
                    found.add(id(node))
    return len(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=12, help="how many of the largest classes to print")
    options = parser.parse_args()
    lines: Counter[str] = Counter()
    modules: Counter[str] = Counter()
    inside: Counter[str] = Counter()
    classes: list[tuple[int, str]] = []
    for path in _sources():
        source = path.read_text(encoding="utf-8")
        level = _layer(_module_name(path))
        name = LAYERS[level][0] if level is not None else "game families"
        lines[name] += _lines(source)
        modules[name] += 1
        tree = ast.parse(source)
        inside[name] += _function_imports(tree)
        relative = path.relative_to(path.parents[len(_module_name(path).split(".")) - 1]).as_posix()
        classes.extend((sum(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) for item in node.body),
                        f"{relative}: {node.name}") for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
    print(f"{'layer':<15} {'modules':>7} {'lines':>7} {'imports inside functions':>25}")
    for name in [layer for layer, _ in reversed(LAYERS)] + ["game families"]:
        print(f"{name:<15} {modules[name]:>7} {lines[name]:>7} {inside[name]:>25}")
    print(f"{'all':<15} {sum(modules.values()):>7} {sum(lines.values()):>7} {sum(inside.values()):>25}")
    print(f"\nthe {options.top} largest classes, by methods:")
    for count, where in sorted(classes, key=lambda entry: (-entry[0], entry[1]))[:options.top]:
        print(f"{count:>4}  {where}")


if __name__ == "__main__":
    main()
