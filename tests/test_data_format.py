"""A finished output directory is data pandas reads directly: every table and view of the
database, the flat per-run table (`runs.csv`) and the per-model table (`by_model.csv`); and
docs/data.md names every table and column the database has."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pandas as pd
from helpers import ROOT, run_experiment

from agentsim.games.naming import NamingGame


def finished(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    run_experiment(NamingGame(agents=8, max_rounds=4, stop_at="none", committed=2, names=("Q", "M"),
                              committed_name="Q", majority_name="M"), out, runs=2)
    return out


def test_every_table_reads_with_pandas_and_the_docs_name_every_column(tmp_path: Path) -> None:
    out = finished(tmp_path)
    connection = sqlite3.connect(out / "agentsim.db")
    names = [name for (name,) in connection.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")]
    assert {"experiment", "runs", "agents", "encounters", "decisions", "rounds", "checkpoints", "moves", "calls",
            "decisions_by_model"} <= set(names)
    documented = set(re.findall(r"`([^`]+)`", (ROOT / "docs" / "data.md").read_text(encoding="utf-8")))
    documented |= {part.strip() for span in documented for part in span.split(",")}
    for name in names:
        frame = pd.read_sql_query(f"SELECT * FROM {name}", connection)
        assert len(frame) > 0, name
        assert name in documented, f"docs/data.md does not name the table {name}"
        missing = [column for column in frame.columns if column not in documented]
        assert not missing, f"docs/data.md does not name {name}'s columns {missing}"
    moves = pd.read_sql_query("SELECT * FROM moves", connection)
    encounters = pd.read_sql_query("SELECT * FROM encounters", connection)
    assert len(moves) == 2 * len(encounters) == 2 * 2 * 4 * 4  # two runs, four rounds of four pairs


def test_the_flat_tables_have_a_row_per_run_and_no_nested_values(tmp_path: Path) -> None:
    out = finished(tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    runs = pd.read_csv(out / "runs.csv")
    assert list(runs["run"]) == [1, 2] and list(runs["status"]) == ["done", "done"]
    assert list(runs["final_success_rate"]) == [run["final_success_rate"] for run in summary["runs"]]
    assert list(runs["usage_by_backend.stand-in.calls"]) == [run["calls"] for run in summary["runs"]]
    for column in runs.columns:
        text = runs[column].astype(str)
        assert not text.str.startswith(("{", "[")).any(), f"{column} holds nested data"
    by_model = pd.read_csv(out / "by_model.csv")
    connection = sqlite3.connect(out / "agentsim.db")
    counted = dict(connection.execute("SELECT a.model, COUNT(*) FROM moves JOIN agents a USING (run, agent) GROUP BY a.model"))
    assert by_model.groupby("model")["decisions"].sum().to_dict() == counted
    committed = by_model[by_model["model"] == "committed:Q"]
    assert (committed["choices.Q"] == committed["decisions"]).all() and (committed["choices.M"] == 0).all()
