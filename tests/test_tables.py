"""The results' DataFrames have one dtype per column whatever the runs did (issue 39): an
experiment where every run flipped, one where some did and one where none did (with and
without fallbacks) give the same dtypes, the ones docs/data.md lists; counts are 0 where
nothing was counted; runs.csv has every column `runs()` has."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from helpers import ROOT, run_experiment

import agentsim
from agentsim.games.commons import CommonsGame
from agentsim.games.naming import NamingGame
from agentsim.games.naming.standin import NamingStandInSettings
from agentsim.games.sign import SignGame
from agentsim.results import Results

TABLES = ("runs", "moves", "decisions", "rounds", "by_model")


def _committed(committed: int, *, max_rounds: int = 20, invalid_rate: float = 0.0) -> NamingGame:
    return NamingGame(agents=10, names=("Q", "M"), memory_length=5, majority_name="M", committed_name="Q",
                      committed=committed, committed_mode="replace", stop_at="flip", max_rounds=max_rounds,
                      standin=NamingStandInSettings(invalid_rate=invalid_rate))


@pytest.fixture(scope="module")
def experiments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Results]:
    """Every run flips (with fallbacks), some do, none does (no fallback), no committed minority."""
    root = tmp_path_factory.mktemp("tables")
    made = {
        "all": (_committed(5, invalid_rate=0.4), 2),
        "some": (_committed(2), 4),
        "none": (_committed(1, max_rounds=4), 2),
        "plain": (NamingGame(agents=6, max_rounds=3), 2),
        "sign": (SignGame(agents=8, max_rounds=3), 1),
        "commons": (CommonsGame(months=2), 1),
    }
    for name, (scenario, runs) in made.items():
        run_experiment(scenario, root / name, runs=runs)
    return {name: agentsim.open(root / name) for name in made}


def _frames(results: Results) -> dict[str, pd.DataFrame]:
    return {name: getattr(results, name)() for name in TABLES} | {"by_model(per_run=True)": results.by_model(per_run=True)}


def _documented() -> dict[str, dict[str, str]]:
    """docs/data.md's dtype of each column of each DataFrame (`### \\`runs()\\``, then rows
    `| \\`column\\` | \\`dtype\\` | ...`)."""
    page = (ROOT / "docs" / "data.md").read_text(encoding="utf-8")
    section = page[page.index("## The DataFrames' dtypes"):]
    tables: dict[str, dict[str, str]] = {}
    current = ""
    for line in section.splitlines():
        heading = re.match(r"### `(\w+\([^`]*\))`", line)
        if heading:
            current = heading.group(1)
            tables[current] = {}
        row = re.match(r"\| ((?:`[^`]+`(?:, )?)+) \| `([^`]+)` \|", line)
        if row and current:
            for column in re.findall(r"`([^`]+)`", row.group(1)):
                tables[current][column] = row.group(2)
    return tables


def test_the_flips_that_happened_are_the_ones_asked_for(experiments: dict[str, Results]) -> None:
    flips = {name: list(experiments[name].runs()["flip"]) for name in ("all", "some", "none")}
    assert all(flips["all"]) and any(flips["some"]) and not all(flips["some"]) and not any(flips["none"])
    assert experiments["all"].decisions()["fallback"].any() and not experiments["none"].decisions()["fallback"].any()


def test_every_column_has_one_dtype_whatever_the_runs_did(experiments: dict[str, Results]) -> None:
    seen: dict[tuple[str, str], set[str]] = {}
    for results in experiments.values():
        for table, frame in _frames(results).items():
            for column, dtype in frame.dtypes.items():
                seen.setdefault((table, str(column)), set()).add(str(dtype))
    varying = {key: dtypes for key, dtypes in seen.items() if len(dtypes) > 1}
    assert not varying
    assert seen["runs", "flip_round"] == {"Int64"} and seen["runs", "flip"] == {"boolean"}
    assert seen["runs", "started"] == seen["runs", "finished"] == {"datetime64[ns, UTC]"}
    assert seen["decisions", "fallback"] == seen["decisions", "sampled_locally"] == {"bool"}
    assert seen["moves", "fallback"] == {"bool"}


def test_the_dtypes_are_the_documented_ones(experiments: dict[str, Results]) -> None:
    documented = _documented()
    assert set(documented) == {"runs()", "moves()", "decisions()", "rounds()", "by_model()"}
    assert documented["runs()"]["flip_round"] == "Int64" and documented["decisions()"]["sampled_locally"] == "bool"
    for results in experiments.values():
        for table, frame in _frames(results).items():
            listed = documented[table.split("(")[0] + "()"]
            for column, dtype in frame.dtypes.items():
                name = str(column)
                key = name if name in listed else next(
                    (pattern for pattern in listed if "*" in pattern and re.fullmatch(
                        re.escape(pattern).replace(r"\*", ".*"), name)), None)
                if key is not None:
                    assert listed[key] == str(dtype), f"{table} {name}: documented {listed[key]}, is {dtype}"
    for name in ("some", "sign", "commons"):
        for table in ("runs", "rounds"):
            listed = documented[f"{table}()"]
            frame = getattr(experiments[name], table)()
            missing = {column for column in frame.columns if column not in listed and not any(
                "*" in pattern and column.startswith(pattern.split("*")[0]) for pattern in listed)}
            assert not missing, f"docs/data.md gives no dtype for {name}'s {table}() columns {sorted(missing)}"


def test_counts_are_zero_where_nothing_was_counted(experiments: dict[str, Results]) -> None:
    rounds = experiments["all"].rounds()
    productions = rounds[[column for column in rounds.columns if column.startswith("productions.")]]
    assert not productions.isna().any().any() and (productions == 0).any().any()
    for by_model in (experiments["all"].by_model(), experiments["all"].by_model(per_run=True)):
        committed = by_model[by_model["model"] == "committed:Q"]
        assert (committed["choices.M"] == 0).all() and (committed["choices.Q"] == committed["answers"]).all()
    assert (experiments["none"].runs()["fallbacks"] == 0).all()


def test_runs_csv_has_every_column_runs_has(experiments: dict[str, Results]) -> None:
    for results in experiments.values():
        csv = pd.read_csv(Path(results.directory) / "runs.csv")
        runs = results.runs()
        assert list(csv.columns) == list(runs.columns)
        assert list(pd.to_datetime(csv["started"], utc=True)) == list(runs["started"])
        by_model = pd.read_csv(Path(results.directory) / "by_model.csv")
        assert not by_model.filter(like="choices.").isna().any().any()
