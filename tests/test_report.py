"""`report` on the output of each scenario file writes figures with their data and one HTML
report holding every figure and table with non-empty data."""

from __future__ import annotations

import base64
import csv
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, cli, run_experiment

from agentsim.analysis.recorded import save_artifact
from agentsim.analysis.report import REPORT_HTML, REPORT_INDEX, build_report
from agentsim.games.naming.bias import PoolSearch, find_unbiased_pool
from agentsim.games.naming.comprehension_check import ComprehensionCheck, check
from agentsim.games.naming.critical_mass import CriticalMassSearch, search_both
from agentsim.scenario_files import load_scenario

SCENARIOS = sorted((ROOT / "scenarios").glob("*.py"))
SHORT = {"individual_bias.py": {"max_rounds": "20"}, "strategies.py": {"max_rounds": "20"},
         "critical_mass.py": {"max_rounds": "8", "agents": "12"}, "critical_mass_search.py": {"max_rounds": "8", "agents": "12"},
         "theory_minimal_naming.py": {"max_rounds": "10"}, "theory_committed_minority.py": {"max_rounds": "5"},
         "theory_best_response.py": {"max_rounds": "8"}, "network_topology.py": {"max_rounds": "8"},
         "finite_size.py": {"agents": "200", "max_rounds": "20"},
         "finite_size_model.py": {"agents": "40", "max_rounds": "12"}}
# What each scenario file's output must at least show.
EXPECTED = {
    "mixed_models.py": {"fig1a_success_rate", "fig1b_name_competition", "usage_by_model"},
    "network_topology.py": {"network_topology", "usage_by_model"},
    "sign_schema.py": {"sign_agreement", "sign_tokens", "usage_by_model"},
    "naming_game.py": {"fig1a_success_rate", "fig1b_name_competition", "fig2a_consensus_names", "usage_by_model"},
    "collective_bias.py": {"fig1a_success_rate", "fig2a_consensus_names", "fig2b_individual_vs_collective"},
    "random_string_pool.py": {"fig1a_success_rate", "fig2b_individual_vs_collective"},
    "comprehension.py": {"fig1a_success_rate", "figs1_comprehension"},
    "individual_bias.py": {"fig2b_individual_vs_collective", "usage_by_model"},
    "strategies.py": {"figs8_strategy_heatmaps"},
    "critical_mass.py": {"fig3a_alternative_production"},
    "critical_mass_search.py": {"fig3a_alternative_production"},
    "stability.py": {"figs7_stability"},
    "theory_minimal_naming.py": {"fig1a_success_rate", "fig2a_consensus_names", "theory_success_rate"},
    "theory_committed_minority.py": {"fig3a_alternative_production"},
    "theory_best_response.py": {"fig3a_alternative_production"},
}


class _Report(HTMLParser):
    """Figures (id, image bytes, data rows) and tables (id, data rows) of a report."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, dict[str, Any]] = {}
        self.tables: dict[str, int] = {}
        self._current: tuple[str, str] | None = None
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        identifier = values.get("id") or ""
        if tag == "figure" and identifier.startswith("figure-"):
            self._current = ("figure", identifier.removeprefix("figure-"))
            self.figures[self._current[1]] = {"image": b"", "rows": 0}
        elif tag == "div" and identifier.startswith("table-"):
            self._current = ("table", identifier.removeprefix("table-"))
            self.tables[self._current[1]] = 0
        elif tag == "img" and self._current and self._current[0] == "figure":
            source = values.get("src") or ""
            assert source.startswith("data:image/png;base64,")
            self.figures[self._current[1]]["image"] = base64.b64decode(source.split(",", 1)[1])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body and self._current:
            kind, name = self._current
            if kind == "figure":
                self.figures[name]["rows"] += 1
            else:
                self.tables[name] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False
        if tag in ("figure", "div"):
            self._current = None


def _check_report(out: Path) -> tuple[dict[str, Any], _Report]:
    """Every figure and table of the index is in the HTML with an image and data rows, and
    on disk as PNG + CSV with rows."""
    index = json.loads((out / REPORT_INDEX).read_text())
    page = _Report()
    page.feed((out / REPORT_HTML).read_text(encoding="utf-8"))
    assert index["figures"], "no figure at all"
    for figure in index["figures"]:
        name = figure["name"]
        assert name in page.figures, f"figure {name} missing from the HTML"
        assert page.figures[name]["image"].startswith(b"\x89PNG"), name
        assert page.figures[name]["rows"] > 0 and figure["rows"] > 0, f"figure {name} has no data"
        assert (out / figure["png"]).stat().st_size > 1000
        with (out / figure["csv"]).open() as file:
            assert len(list(csv.reader(file))) == figure["rows"] + 1
    for table in index["tables"]:
        assert page.tables.get(table["name"], 0) > 0, f"table {table['name']} missing or empty in the HTML"
        assert (out / table["csv"]).is_file()
    return index, page


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda path: path.name)
def test_report_on_each_scenario_files_output(tmp_path: Path, path: Path) -> None:
    scenario, module = load_scenario(path)
    scenario = scenario.with_overrides(SHORT.get(path.name, {}))
    runs = min(int(getattr(module, "RUNS", 1)), 3) or 1
    run_experiment(scenario, tmp_path / "out", seed=1, runs=runs)
    if path.name == "comprehension.py":
        check(tmp_path / "out", ComprehensionCheck(agents=4, max_states=20))
    index, _page = _check_report_after(tmp_path / "out")
    names = {figure["name"] for figure in index["figures"]}
    expected = EXPECTED.get(path.name, set())  # a scenario file added later needs only some figure
    assert expected <= names, expected - names


def _check_report_after(directory: Path) -> tuple[dict[str, Any], _Report]:
    build_report(directory)
    return _check_report(directory / "report")


def test_report_command_on_every_experiment_of_the_paper(tmp_path: Path) -> None:
    """One directory with every kind of output: the CLI report holds every section."""
    root = tmp_path / "paper"
    for name, overrides, runs in (("collective_bias.py", {"max_rounds": "30"}, 4),
                                  ("individual_bias.py", {"max_rounds": "20"}, 1),
                                  ("strategies.py", {"max_rounds": "20"}, 1),
                                  ("naming_game.py", {"max_rounds": "15"}, 2),
                                  ("stability.py", {"max_rounds": "10"}, 2)):
        scenario, _module = load_scenario(ROOT / "scenarios" / name)
        run_experiment(scenario.with_overrides(overrides), root / name.removesuffix(".py"), seed=1, runs=runs)
    check(root / "naming_game", ComprehensionCheck(agents=4, max_states=20))
    scenario, _module = load_scenario(ROOT / "scenarios" / "critical_mass_search.py")
    search_both(CriticalMassSearch(scenario=scenario.with_params(agents=12), majority="M", alternative="Q", runs=2,
                                   max_rounds=30), root / "critical_mass")
    pools = find_unbiased_pool(PoolSearch(samples=500, threshold=0.02, max_tries=5))
    save_artifact(root / "pools", "unbiased_pool", pools.as_dict() | {"backend": "stand-in", "threshold": 0.02})

    result = cli("report", str(root), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "open" in result.stdout and REPORT_HTML in result.stdout
    index, page = _check_report(root / "report")
    assert set(index["sections"]) >= {"emergence", "competition", "consensus", "bias", "unbiased_pool", "critical_mass",
                                      "stability", "strategies", "comprehension", "usage"}
    assert {"fig1a_success_rate", "fig1b_name_competition", "fig2a_consensus_names", "fig2b_individual_vs_collective",
            "fig3a_alternative_production", "fig3b_critical_mass", "figs7_stability", "figs1_comprehension", "figs8_strategy_heatmaps",
            "figs9_weighted_strategies", "usage_by_model"} <= set(page.figures)
    assert {"table_s1_individual_bias", "table_s3_critical_mass", "table1_strategies", "table1_interaction_bias",
            "table_unbiased_pools", "table_usage"} <= set(page.tables)
    html = (root / "report" / REPORT_HTML).read_text()
    assert "stand-in policy, not a language model" in html


def test_report_errors_are_one_line_with_exit_2(tmp_path: Path) -> None:
    missing = cli("report", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "not a directory" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = cli("report", str(tmp_path / "empty"))
    assert empty.returncode == 2 and len(empty.stderr.strip().splitlines()) == 1
    assert "no runs found" in empty.stderr and "python -m agentsim" in empty.stderr


def test_a_new_section_registers_without_editing_the_core(tmp_path: Path) -> None:
    from agentsim.analysis import report

    scenario, _module = load_scenario(ROOT / "scenarios" / "naming_game.py")
    run_experiment(scenario.with_overrides({"max_rounds": "3"}), tmp_path / "out", seed=1)

    @report.register_section("runs_per_experiment", "Runs per experiment", order=99, applies=lambda context: True)
    def runs_per_experiment(context: report.ReportContext) -> None:
        context.add_table("table_runs", "Runs", ["experiment", "runs"],
                          [[experiment.directory.name, len(experiment.runs)] for experiment in context.experiments])

    try:
        index = build_report(tmp_path / "out")
    finally:
        report.SECTIONS.pop("runs_per_experiment")
    assert "runs_per_experiment" in index["sections"]
    assert {"name": "table_runs", "section": "runs_per_experiment", "rows": 1, "csv": "table_runs.csv"} in index["tables"]
