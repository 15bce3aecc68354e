"""A fallback is never a choice: it is stored as one (decisions.fallback), and every analysis
(first choices, choices, strategy tables, bias tests) counts model answers only and reports the
fallback rate. The issue's case: a 75% prior measured 0.731 with valid replies and 0.549 at 80%
invalid replies, because the random fallbacks were counted."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

from helpers import run_experiment

from agentsim.analysis.recorded import find_experiments
from agentsim.games.naming import FirstChoiceProbe, NamingStandInSettings, StrategyProbe
from agentsim.games.naming import recorded as naming_record
from agentsim.games.naming.bias import first_choice_fallbacks, individual_bias
from agentsim.games.naming.strategies import strategy_table


def probe(invalid_rate: float) -> FirstChoiceProbe:
    return FirstChoiceProbe(agents=24, names=("Q", "M"), max_rounds=120, stop_at="none",
                            standin=NamingStandInSettings(bias_name="M", bias=0.5, invalid_rate=invalid_rate))


def test_fallbacks_are_stored_and_left_out_of_first_choices(tmp_path: Path) -> None:
    shares = {}
    for rate in (0.0, 0.8):
        out = tmp_path / f"invalid-{rate}"
        (summary,) = run_experiment(probe(rate), out)
        (experiment,) = find_experiments(out)
        counts = naming_record.first_choices(experiment)
        fallbacks, decisions = naming_record.first_choice_fallbacks(experiment)
        assert fallbacks == summary["fallbacks"], "each fallback is stored as one"
        assert sum(counts.values()) + fallbacks == decisions == summary["interactions"] * 2
        stored = sqlite3.connect(out / "agentsim.db").execute("SELECT SUM(fallback) FROM moves").fetchone()[0] or 0
        assert stored == fallbacks
        assert (fallbacks > decisions / 3) if rate else fallbacks == 0
        shares[rate] = counts["M"] / sum(counts.values())
        ((_, test),) = individual_bias([experiment]).items()
        assert sum(test.counts) == sum(counts.values()), "the bias test counts model answers only"
        assert list(first_choice_fallbacks([experiment]).values()) == [(fallbacks, decisions)]
    assert shares[0.0] > 0.70 and shares[0.8] > 0.70, f"a 75% prior measured as {shares}"
    assert abs(shares[0.8] - shares[0.0]) < 0.06


def test_strategy_tables_count_model_answers_and_show_the_fallback_rate(tmp_path: Path) -> None:
    (summary,) = run_experiment(StrategyProbe(agents=24, names=("Q", "M"), max_rounds=20, stop_at="none",
                                              standin=NamingStandInSettings(invalid_rate=0.7)), tmp_path / "probe")
    table = strategy_table(find_experiments(tmp_path / "probe"))
    assert table is not None
    rows = table.rows("M")
    assert sum(row["fallbacks"] for row in rows) == summary["fallbacks"] > 0
    assert sum(row["samples"] + row["fallbacks"] for row in rows) == 2 * summary["interactions"]
    assert table.fallback_rate == summary["fallbacks"] / (2 * summary["interactions"])


def test_the_report_shows_each_models_fallback_rate(tmp_path: Path) -> None:
    from agentsim.analysis.report import build_report

    (summary,) = run_experiment(probe(0.8), tmp_path / "probe")
    index = build_report(tmp_path / "probe")
    assert "usage_by_model" in {figure["name"] for figure in index["figures"]}
    with open(tmp_path / "probe" / "report" / "table_usage.csv") as table:
        (row,) = list(csv.DictReader(table))
    assert int(row["fallbacks"]) == summary["fallbacks"] > 0
    assert int(row["decisions"]) == 2 * summary["interactions"]
    assert float(row["fallback_rate"]) == round(summary["fallbacks"] / (2 * summary["interactions"]), 4)
