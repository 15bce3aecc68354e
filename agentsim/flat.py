"""Flat tables beside `summary.json`: `runs.csv`, one row per run, and `by_model.csv`, one row
per run and model, that pandas (or a spreadsheet) reads directly: `pd.read_csv(DIR / "runs.csv")`.

A run's summary is nested (usage per backend, errors per kind, a grid cell's parameters); its
flat row spells a nested value's path with dots (`usage_by_backend.stand-in.calls`,
`variant_params.condition`). Lists (per-round series such as SIGN's `agreement_by_round`, the
commons' `stock`) are not one value: they stay in `summary.json`, and per round in the
database's `rounds` table. `by_model` has its own table (docs/data.md lists every column).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

RUNS_CSV = "runs.csv"
BY_MODEL_CSV = "by_model.csv"
BY_MODEL_COLUMNS = ("run", "model", "kind", "agents", "decisions", "fallbacks", "answers", "mean_payoff")
# The `runs` table's own columns, first in runs.csv and `Results.runs()` (the summary's follow).
RUN_COLUMNS = ("run", "replicate", "seed", "backend", "status", "stop_reason", "started", "finished")


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested summary as one level of dotted keys; lists are left out."""
    flat: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            flat.update(flatten(item, name + "."))
        elif not isinstance(item, (list, tuple)):
            flat[name] = item
    return flat


def run_rows(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per run summary (its `by_model` left to `by_model_rows`)."""
    return [flatten({key: value for key, value in run.items() if key != "by_model"}) for run in runs]


def run_table_rows(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per row of the store's `runs` table (`Store.runs()`): its own columns
    (`RUN_COLUMNS`: status, times), then its summary flat. runs.csv and `Results.runs()` both."""
    rows = []
    for run in runs:
        base = {key: run.get(key) for key in RUN_COLUMNS}
        summary = run_rows([run.get("summary") or {}])[0]
        rows.append(base | {key: value for key, value in summary.items() if key not in base})
    return rows


def by_model_rows(by_model: Mapping[int, Mapping[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One flat row per run and model (`Store.by_model`'s counts), its choices as
    `choices.ACTION`: a column for every action any model chose, 0 where one never did."""
    rows = []
    for run, models in sorted(by_model.items()):
        for model, entry in sorted(models.items()):
            row = {"run": run, "model": model, **{key: entry.get(key) for key in BY_MODEL_COLUMNS[2:]}}
            row.update({f"choices.{action}": count for action, count in sorted((entry.get("choices") or {}).items())})
            rows.append(row)
    return counted_as_zero(rows, "choices.")


def counted_as_zero(rows: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """`rows` with every count column (named `prefix`ACTION) in each row, 0 where it was missing."""
    columns = list(dict.fromkeys(key for row in rows for key in row if key.startswith(prefix)))
    return [row | {column: row.get(column, 0) for column in columns} for row in rows]


def write_csv(path: Path, rows: list[dict[str, Any]], first: tuple[str, ...] = ()) -> None:
    """The rows as CSV (columns: `first`, then every other key in the order first seen; a
    missing value is empty), written whole or not at all."""
    columns = list(first)
    for row in rows:
        columns.extend(key for key in row if key not in columns)
    temporary = path.with_suffix(".csv.tmp")
    with temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    temporary.replace(path)
