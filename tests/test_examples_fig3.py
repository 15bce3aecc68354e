"""examples/fig3.py, the script a notebook user copies, reproduces Fig. 3 from the Python API on
the stand-in (small: N = 8, three sizes, two runs each)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
from helpers import ROOT


def test_the_fig3_example_runs_on_the_stand_in_and_draws_its_figure(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("fig3_example", ROOT / "examples" / "fig3.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = module.main(["--agents", "8", "--sizes", "1,4,7", "--runs", "2", "--max-rounds", "8", "--out", str(tmp_path)])
    assert (tmp_path / "fig3.png").stat().st_size > 10_000
    written = pd.read_csv(tmp_path / "fig3.csv")
    assert len(written) == len(table) and set(written["committed"]) == {1, 4, 7}
    assert set(written["majority"]) == {"M", "Q"}
    runs = written.drop_duplicates(["majority", "committed", "run"])
    assert len(runs) == 2 * 3 * 2  # conventions x sizes x runs
    flipped = runs.groupby("committed")["flipped"].mean()
    assert flipped[7] >= flipped[1]  # a larger minority flips at least as often
    assert flipped[7] > 0, "seven committed agents of eight flip the convention"
    for majority in ("M", "Q"):  # each size's runs are an output directory agentsim.open reads again
        assert (tmp_path / f"{majority}_to_{'Q' if majority == 'M' else 'M'}" / "committed_004" / "runs.csv").is_file()
