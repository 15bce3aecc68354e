"""Every repository path a doc names exists: the README, docs/*.md and backends/*/README.md.

A path is ours when it is a relative link, or a path in code or backticks whose first part is
a file or folder of this repository (or of the `agentsim` package: `games/commons/game.py`).
`module.Name` may follow a module's path (`llm/specs.PROVIDERS`), a glob must match something,
and hidden folders (`.venv`, a build tree) are made, not shipped. Another repository's paths
are written with its name first (`GovSim: simulation/.../x.py:83`) and are not ours; their
first parts are not this repository's. A doc never points outside the repository: an absolute
path to a document or a source file is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("backends/*/README.md"))]
_CODE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_PATH = re.compile(r"(?<![\w./:~*-])(/?(?:[\w.*-]+/)+[\w.*-]*)")
_FOREIGN = re.compile(r"^[A-Za-z][\w.-]*: ")  # "GovSim: simulation/..." names another repository's file
_OUTSIDE = re.compile(r"\.(?:md|py|txt|ipynb|ya?ml|toml)$")


def _spans(text: str) -> list[str]:
    return [block or span for block, span in _CODE.findall(text)]


def _exists(path: str, *bases: Path) -> bool:
    for base in bases:
        if "*" in path:
            if any(base.glob(path.rstrip("/"))):
                return True
            continue
        target = base / path
        module, _, attribute = target.name.partition(".")
        if target.exists() or (attribute[:1].isupper() and (target.parent / f"{module}.py").exists()):
            return True
    return False


def _ours(path: str) -> list[Path]:
    """The bases `path` is anchored in: the repository's root, the `agentsim` package."""
    first = path.split("/", 1)[0]
    return [base for base in (ROOT, ROOT / "agentsim") if (base / first).exists()]


def missing(doc: Path) -> list[str]:
    text = doc.read_text(encoding="utf-8")
    problems = []
    for target in _LINK.findall(text):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        if not (doc.parent / target.split("#", 1)[0]).exists():
            problems.append(f"link {target}")
    for span in _spans(text):
        if _FOREIGN.match(span):
            continue
        for path in _PATH.findall(span):
            if any(part.startswith(".") for part in path.split("/")[:-1]):  # made by a build, not shipped
                continue
            if path.startswith("/"):
                if _OUTSIDE.search(path) and not path.startswith("/path/to/"):
                    problems.append(f"{path} (outside the repository)")
                continue
            bases = _ours(path)
            if bases and not _exists(path, *bases):
                problems.append(path)
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=[str(doc.relative_to(ROOT)) for doc in DOCS])
def test_every_repository_path_a_doc_names_exists(doc: Path) -> None:
    assert missing(doc) == []


def test_the_check_finds_what_is_missing(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("The parser (`games/sign_schema.py`), [a link](nowhere.md), `/work/shared/REFERENCE.md`;\n"
                   "fine: `agentsim/games/commons/game.py`, `llm/specs.PROVIDERS`, `scenarios/theory_*.py`,\n"
                   "`GovSim: simulation/persona/cognition/retrieve.py:64`, `results/x/summary.json`, `/v1/models`.\n",
                   encoding="utf-8")
    assert missing(doc) == ["link nowhere.md", "games/sign_schema.py", "/work/shared/REFERENCE.md (outside the repository)"]
