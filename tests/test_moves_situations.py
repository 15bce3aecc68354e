"""Issue 37 (11): `Results.moves(situations=True)` reads every family whose codec decodes its
contexts, not only the naming games': a situation without `options` or `memory` (the commons')
gives None there, a layer game's `Ask` gives its options and facts, and the decoded situation
itself is in the `situation` column."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, run_experiment

import agentsim
from agentsim.scenario_files import load_scenario

FILES = ["prisoners_dilemma.py", "commons_fishing.py", "stag_hunt.py", "sign_schema.py", "naming_game.py"]


@pytest.mark.parametrize("name", FILES)
def test_moves_with_situations_reads_every_family(tmp_path: Path, name: str) -> None:
    scenario, _module = load_scenario(ROOT / "scenarios" / name)
    if scenario.codec is None:
        pytest.skip(f"{name} keeps no decodable situation")
    run_experiment(scenario.with_overrides({"max_rounds": "2"}), tmp_path / "out", seed=1)
    with agentsim.open(tmp_path / "out") as results:
        moves = results.moves(situations=True)
    asked = moves[moves["situation"].notna()]
    assert len(asked) > 0
    codec_type = type(asked["situation"].iloc[0]).__name__
    assert codec_type != "NoneType"
    if name == "prisoners_dilemma.py":  # a layer game: the ask, its facts as the memory
        assert codec_type == "Ask"
        assert asked["memory"].map(lambda facts: "partner_record" in dict(facts)).all()
        assert asked["options"].map(set).eq({"C", "D"}).all()
    if name == "naming_game.py":
        assert asked["memory"].notna().all() and asked["options"].notna().all()
