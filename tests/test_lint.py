"""ruff (on all code a user runs: the package, tests, benchmarks, backends, examples, scenarios)
and mypy pass: `.ci/run` (the README's test command) runs them through this test, with the rules
configured in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


RUFF = ["ruff", "check", "agentsim", "tests", "benchmarks", "backends", "examples", "scenarios"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("command", [RUFF, ["mypy", "agentsim"]], ids=["ruff", "mypy"])
def test_the_code_passes_the_linters(command: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=590,
                            check=False)
    assert result.returncode == 0, f"{' '.join(command)} found problems:\n{result.stdout}{result.stderr}"
