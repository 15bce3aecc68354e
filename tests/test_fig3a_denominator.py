"""Issue 37 (18): Fig. 3A's per-round share carries a stopped run's last value forward (as the
paper's averages do for a run that has flipped); its CSV and caption now say which runs a
round's value covers: `runs` (in the mean), `runs_played` (played the round), and
`runs_carried_forward` (stopped before it, their last share carried). It used to count a
stopped run in `runs` as if it had played ("0.8055 over 10 runs, of which 8 played it")."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from helpers import run_experiment

from agentsim.analysis.report import build_report
from agentsim.games.naming import NamingGame
from agentsim.store import Store


def test_fig3a_says_which_runs_each_round_covers(tmp_path: Path) -> None:
    game = NamingGame(agents=8, names=("Q", "M"), memory_length=3, committed=3, committed_mode="replace",
                      majority_name="M", committed_name="Q", stop_at="flip", max_rounds=40)
    run_experiment(game, tmp_path / "cm", seed=3, runs=6)
    store = Store(tmp_path / "cm")
    lengths = Counter(run for (run,) in store.rows("SELECT run FROM rounds"))
    store.close()
    assert len(set(lengths.values())) > 1, lengths  # runs that stopped at different rounds
    build_report(tmp_path)
    with (tmp_path / "report" / "fig3a_alternative_production.csv").open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert rows
    for row in rows:
        round_ = int(row["round"])
        played = sum(length >= round_ for length in lengths.values())
        assert int(row["runs_played"]) == played, row
        assert int(row["runs_played"]) + int(row["runs_carried_forward"]) == int(row["runs"]) == len(lengths)
    assert any(int(row["runs_carried_forward"]) > 0 for row in rows)
    html = (tmp_path / "report" / "report.html").read_text()
    assert "carried forward" in html
