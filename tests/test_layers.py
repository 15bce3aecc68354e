"""The package's layers: analysis reads what runs recorded and never needs the command line."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import agentsim.analysis


def test_no_analysis_module_imports_the_command_line() -> None:
    modules = [f"agentsim.analysis.{info.name}" for info in pkgutil.iter_modules(agentsim.analysis.__path__)]
    assert "agentsim.analysis.commands" in modules
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "print('agentsim.cli' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
