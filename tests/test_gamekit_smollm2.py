"""A game on the game layer with a real model in process (SmolLM2-135M-Instruct by llama.cpp,
`local:smollm2`): under the choice grammar each ask is decoded to one of its replies, and the
recorded probabilities are the sampler's exact chances of each option, summing to one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from helpers import ROOT

from agentsim.cli import main
from agentsim.store import Store


def test_constrained_decoding_records_exact_option_distributions(tmp_path: Path) -> None:
    out = tmp_path / "ultimatum"
    assert main([str(ROOT / "scenarios" / "ultimatum.py"), "--backend", "local:smollm2", "--no-live", "--runs", "1",
                 "--set", "agents=4", "--set", "constrained_decoding=true", "--out", str(out)]) == 0
    store = Store(out)
    rows = list(store.rows("SELECT reply, action, probabilities, context FROM decisions WHERE run = 1"))
    store.close()
    assert len(rows) == 4
    for reply, action, probabilities, context in rows:
        options = json.loads(context)["c"]
        chances = json.loads(probabilities)
        expected = {"number": [str(value) for value in range(11)], "options": ["accept", "reject"]}[options["kind"]]
        assert sorted(chances) == sorted(expected) and sum(chances.values()) == pytest.approx(1, abs=1e-3)
        assert reply == f"{action}." and action in expected
