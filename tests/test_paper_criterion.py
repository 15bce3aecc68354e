"""Table S3 and Fig. 3B show the paper's own critical-mass criterion beside agentsim's: the
runs' mean curve flipping (its plotter's) and every run flipping (agentsim's). The files here
are small ones written in the AI-norms format (tests/test_import_ainorms.py), never the paper's."""

from __future__ import annotations

import csv
import html
import itertools
from pathlib import Path
from typing import Any

from test_import_ainorms import population_run, write_zip

from agentsim.analysis.recorded import read_artifacts
from agentsim.analysis.report import build_report
from agentsim.games.naming import NamingGame
from agentsim.games.naming.ainorms import ImportSettings, import_source
from agentsim.games.naming.critical_mass import CriticalMassSearch, paper_curve_of_rounds, search_both
from agentsim.games.naming.standin import NamingStandInSettings


def almost_always_m() -> Any:
    """An agent population that says M seven times in eight, whatever it heard: its share of M
    never reaches 95%, so its run never flips by agentsim's rule, but it carries the mean."""
    count = itertools.count()
    return lambda history, rng: "Q" if next(count) % 8 == 7 else "M"


def test_table_s3_shows_the_papers_criterion_beside_agentsims(tmp_path: Path) -> None:
    """With 2 of 4 committed, nine runs flip and one stays at 7/8: the mean curve flips (the
    paper's 2), not every run (agentsim's: none); with 1, no run flips."""
    two = {run: population_run(4, 120, seed=200 + run, memory=2, start="Q", committed=2, committed_to="M") for run in range(9)}
    two[9] = population_run(4, 120, seed=299, memory=2, start="Q", committed=2, committed_to="M", answer=almost_always_m())
    one = {run: population_run(4, 120, seed=100 + run, memory=2, start="Q", committed=1, committed_to="M",
                               answer=lambda history, rng: "Q") for run in range(3)}
    archive = write_zip(tmp_path / "toy_data.zip", {
        "toy_swap_0_1cmtd_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl": one,
        "toy_swap_0_2cmtd_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl": two,
    })
    result = import_source(archive, tmp_path / "out", ImportSettings(max_rounds=60))
    [found] = result.critical_masses
    assert found.result.tried[2]["flips"] == 9 and found.result.critical_mass is None
    assert found.paper == 2
    build_report(tmp_path / "out")
    with (tmp_path / "out" / "report" / "table_s3_critical_mass.csv").open(encoding="utf-8") as handle:
        [row] = list(csv.DictReader(handle))
    assert (row["critical_mass"], row["critical_mass_paper_criterion"], row["fraction_paper_criterion"]) == ("", "2", "0.5")
    with (tmp_path / "out" / "report" / "fig3b_critical_mass.csv").open(encoding="utf-8") as handle:
        assert [line["critical_mass_paper_criterion"] for line in csv.DictReader(handle)] == ["2"]
    page = html.unescape((tmp_path / "out" / "report" / "report.html").read_text(encoding="utf-8"))
    assert "Table S3): agentsim's rule and the paper's criterion" in page and "critical_mass_paper_criterion" in page


def test_agentsims_own_search_judges_each_size_by_the_papers_criterion_too(tmp_path: Path) -> None:
    scenario = NamingGame(agents=8, names=("Q", "M"), memory_length=3,
                          standin=NamingStandInSettings(bias_name="M", bias=0.3, noise=0.1))
    spec = CriticalMassSearch(scenario=scenario, majority="M", alternative="Q", runs=2, max_rounds=20, seed=0)
    results = search_both(spec, tmp_path)
    for result in results:
        assert all(isinstance(tried["paper_criterion_flips"], bool) for tried in result.tried.values())
        # wherever every run flips the mean curve flips too, so the paper's value is no larger
        if result.critical_mass is not None:
            assert result.paper_critical_mass is not None and result.paper_critical_mass <= result.critical_mass
    [(_, document)] = read_artifacts(tmp_path)["critical_mass"]
    assert [entry["paper_criterion_critical_mass"] for entry in document["results"]] == \
        [result.paper_critical_mass for result in results]


def test_a_paper_curve_bins_two_rounds_by_their_counts() -> None:
    rounds = [{"uncommitted_productions": 3, "uncommitted_alternative": 3, "alternative_share": 1.0},
              {"uncommitted_productions": 1, "uncommitted_alternative": 0, "alternative_share": 0.0},
              {"alternative_share": 0.5}]  # a store from before the counts were kept: its share alone
    assert paper_curve_of_rounds(rounds) == [0.75, 0.5]
    assert paper_curve_of_rounds([]) == []
