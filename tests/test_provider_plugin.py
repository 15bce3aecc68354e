"""A provider from outside the tree (issue 43, item 3): a tiny distribution in a scratch
directory, named by an `agentsim.backends` entry point, with no edit inside agentsim, runs a
scenario, is estimated, is budgeted (priced at the genai-prices provider its descriptor names,
or refused under --max-cost) and is checked by `check-model`. Nothing is installed: the
directory goes on PYTHONPATH of the subprocesses that use it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMING = str(ROOT / "scenarios" / "naming_game.py")
SMALL = ("--set", "agents=6", "--set", "max_rounds=3", "--runs", "1")

# A hosted API answering in process: it picks an option by the request's seed and counts its
# tokens four characters a token. Its descriptor says everything agentsim needs of it.
PACKAGE = '''
from agentsim.llm.base import Completion
from agentsim.llm.providers import Provider


class EchoModel:
    immediate = False

    def __init__(self, spec, options):
        self.name, self.model, self.calls = spec.text, spec.target, 0

    async def complete(self, request):
        self.calls += 1
        options = request.options or ("OK",)
        text = options[(request.seed or 0) % len(options)]
        prompt = sum(len(message.content) // 4 + 1 for message in request.messages)
        return Completion(text=text, prompt_tokens=prompt, completion_tokens=1, model=self.model)

    async def aclose(self):
        return None


PROVIDER = Provider(name="echo", summary="a third party's hosted API", build=EchoModel, remote=True,
                    prices="groq", latency_s=0.25, key_variable="ECHO_API_KEY")
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    (root / "echo_backend").mkdir()
    (root / "echo_backend" / "__init__.py").write_text(PACKAGE, encoding="utf-8")
    info = root / "echo_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-backend\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[agentsim.backends]\necho = echo_backend:PROVIDER\n", encoding="utf-8")
    return root


def _agentsim(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(ROOT), *sys.path]))
    return subprocess.run([sys.executable, "-m", "agentsim", *arguments], capture_output=True, text=True, timeout=300,
                          env=environment, cwd=root)


def test_a_provider_from_an_entry_point_runs_and_is_budgeted_at_its_price(plugin: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _agentsim(plugin, NAMING, *SMALL, "--backend", "echo:llama-3.3-70b-versatile", "--max-cost", "1",
                       "--no-live", "--out", str(out))
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    price = summary["prices"]["llama-3.3-70b-versatile"]
    assert "groq" in price["source"] and (price["input_usd_per_mtok"], price["output_usd_per_mtok"]) == (0.59, 0.79)
    usage = summary["usage_by_backend"]["echo:llama-3.3-70b-versatile"]
    assert usage["calls"] > 0 and usage["cost_usd"] > 0
    recorded = sum(line["cost_usd"] for line in summary["usage_by_backend"].values())  # its start-up probe's too
    assert 0 < summary["budget"]["cost_usd"] <= 1 and recorded == pytest.approx(summary["budget"]["cost_usd"], abs=4e-6)


def test_a_model_its_provider_cannot_price_is_refused_under_max_cost(plugin: Path, tmp_path: Path) -> None:
    result = _agentsim(plugin, NAMING, *SMALL, "--backend", "echo:house-model", "--max-cost", "1", "--no-live",
                       "--out", str(tmp_path / "refused"))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "'house-model'" in line and "AGENTSIM_PRICES" in line, line
    assert not (tmp_path / "refused").exists()


def test_a_provider_from_an_entry_point_is_estimated_with_its_price_and_latency(plugin: Path) -> None:
    result = _agentsim(plugin, "estimate", NAMING, *SMALL, "--backend", "echo:llama-3.3-70b-versatile")
    assert result.returncode == 0, result.stderr
    assert "groq" in result.stdout and "0.25 s a call (assumed)" in result.stdout, result.stdout
    assert "unpriced" not in result.stdout and "no price" not in result.stdout


def test_check_model_asks_a_provider_from_an_entry_point(plugin: Path) -> None:
    result = _agentsim(plugin, "check-model", "--backend", "echo:llama-3.3-70b-versatile", "--seeds", "10",
                       "--preference-seeds", "4")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("check-model echo:llama-3.3-70b-versatile"), result.stdout
    assert "readable" in result.stdout and "verdict" in result.stdout


def test_an_unknown_provider_is_named_with_the_registered_ones(plugin: Path) -> None:
    result = _agentsim(plugin, NAMING, *SMALL, "--backend", "nonesuch:model", "--no-live")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "echo" in line and "openai" in line and "nonesuch" in line, line
