"""Per-model results of a mixed population: `by_model` in summary.json (each run's and the
experiment's), counted as SQL counts them, and a report table; and the stand-in flag, per
backend and the same in the log and summary.json."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from helpers import Quiet
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.analysis.report import build_report
from agentsim.games.naming import NamingGame
from agentsim.live import LogView, configure_logging
from agentsim.llm.retries import RetryPolicy
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig


def run(out: Path, population: str, *, view: Any = None, runs: int = 2, **options: Any) -> dict[str, Any]:
    scenario = NamingGame(agents=8, max_rounds=3, stop_at="none", committed=2, committed_name=None)
    llm = BackendOptions(**{"retry": RetryPolicy(max_attempts=2, deadline_s=5.0), "timeout_s": 5.0, **options})
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, population=population, runs=runs, seed=4,
                                             llm=llm), view or Quiet())
    experiment.open()
    asyncio.run(experiment.run())
    return json.loads((out / "summary.json").read_text())


def test_by_model_of_a_mixed_naming_population_matches_the_database(tmp_path: Path) -> None:
    out = tmp_path / "mixed"
    summary = run(out, "stand-in:a=3,stand-in:b=5")
    connection = sqlite3.connect(out / "agentsim.db")
    sql = ("SELECT a.model, COUNT(*), SUM(d.fallback IS 1), SUM(d.payoff) FROM decisions d JOIN agents a "
           "USING (run, agent) WHERE d.payoff IS NOT NULL AND d.run = ? GROUP BY a.model")
    for run_summary in summary["runs"]:
        by_model = run_summary["by_model"]
        counted = {model: (decisions, fallbacks) for model, decisions, fallbacks, _ in
                   connection.execute(sql, (run_summary["run"],))}
        assert set(by_model) == set(counted)
        (committed,) = set(by_model) - {"stand-in:a", "stand-in:b"}
        assert committed.startswith("committed:") and by_model[committed]["kind"] == "committed"
        for model, (decisions, fallbacks) in counted.items():
            assert (by_model[model]["decisions"], by_model[model]["fallbacks"]) == (decisions, fallbacks)
            assert sum(by_model[model]["choices"].values()) == decisions - fallbacks
        agents = dict(connection.execute("SELECT model, COUNT(*) FROM agents WHERE run = ? GROUP BY model",
                                         (run_summary["run"],)))
        assert {model: entry["agents"] for model, entry in by_model.items()} == agents
        assert agents["stand-in:a"] + agents["stand-in:b"] == 6  # two committed agents replace two of eight
    for model, (decisions, choices) in {
        model: (decisions, dict(connection.execute(
            "SELECT d.action, COUNT(*) FROM decisions d JOIN agents a USING (run, agent) WHERE d.payoff IS NOT NULL "
            "AND d.fallback IS NOT 1 AND a.model = ? GROUP BY d.action", (model,))))
        for model, decisions in connection.execute(
            "SELECT a.model, COUNT(*) FROM decisions d JOIN agents a USING (run, agent) WHERE d.payoff IS NOT NULL "
            "GROUP BY a.model")
    }.items():
        total = summary["by_model"][model]
        assert total["decisions"] == decisions and total["choices"] == choices and total["runs"] == 2
    index = build_report(out)
    assert "by_model" in index["sections"]
    table = (out / "report" / "table_by_model.csv").read_text().splitlines()
    assert len(table) == 1 + 3 and any("stand-in:a" in line for line in table)


def test_the_stand_in_flag_is_per_backend_and_the_same_in_log_and_summary(tmp_path: Path, capsys: Any,
                                                                         standin_server: Any) -> None:
    server = standin_server(capacity=8)
    openai = f"openai:stand-in-model@{server.url}/v1"
    configure_logging()
    summary = run(tmp_path / "out", f"stand-in=4,{openai}=4", view=LogView(every_seconds=0), runs=1)
    started = next(line for line in capsys.readouterr().err.splitlines() if "experiment_started" in line)
    assert summary["stand_in"] is False and "stand_in=False" in started
    assert [(share["agents"], share["stand_in"]) for share in summary["backends"]] == [(4, True), (4, False)]
    assert "'stand_in': True" in started and "'stand_in': False" in started  # the log names them per backend too
    alone = run(tmp_path / "alone", "stand-in=8", runs=1)
    assert alone["stand_in"] is True and alone["backends"] == [{"spec": "stand-in", "agents": 8, "stand_in": True}]
