"""The score table of results directories: GAMA-Bench's 0-100 score per model, game, prompt
version and condition, over imported runs and agentsim runs of the GAMA-Bench scenario files
alike. Both keep each round's record in GAMA-Bench's shape in the store's `rounds` table, so
one function (scoring.score) scores both.

An imported experiment names its model, version and condition (`gamabench` in the
experiment); an agentsim run's model is its agents' (several joined by "+": a mixed
population), its version the scenario's `version` parameter, its condition "". An imported
round's stats are GAMA-Bench's record itself; a games-layer round line (agentsim/gamekit)
carries it as its table's `data` (`Round.record`), its players as `agents`.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from statistics import mean, stdev
from typing import Any

from ...analysis.recorded import RecordedExperiment
from . import SCENARIO_PREFIX
from .scoring import game_name, score

COLUMNS = ("model", "game", "version", "condition", "runs", "score", "std", "fallbacks")


@dataclass(frozen=True, kw_only=True)
class RunScore:
    model: str
    game: str
    version: str
    condition: str
    run: int
    score: float
    where: str
    fallbacks: int = 0  # moves no reply gave: part of the round as played, so of the score; said beside it


def gamabench_experiments(experiments: Iterable[RecordedExperiment]) -> list[RecordedExperiment]:
    return [experiment for experiment in experiments
            if experiment.scenario_name.startswith(SCENARIO_PREFIX) and experiment.runs]


def run_scores(experiment: RecordedExperiment) -> list[RunScore]:
    """Each finished run's score."""
    base = experiment.scenario_name.removeprefix(SCENARIO_PREFIX)
    params = experiment.params
    if "player_num" not in params and "agents" in params:
        params["player_num"] = params["agents"]
    named: dict[str, Any] = dict(experiment.experiment.get("gamabench") or {})
    models = _models(experiment)
    fallbacks = dict(experiment.store.rows("SELECT run, COUNT(*) FROM moves WHERE fallback = 1 GROUP BY run"))
    found = []
    for run, entries in experiment.round_stats.items():
        records = [round_record(entry) for entry in entries]
        if not records:
            continue
        found.append(RunScore(model=str(named.get("model") or models.get(run, "unknown")),
                              game=str(named.get("game") or game_name(base, params)),
                              version=str(named.get("version") or params.get("version", "v1")),
                              condition=str(named.get("condition", "")), run=run,
                              score=score(base, params, records), where=experiment.label,
                              fallbacks=int(fallbacks.get(run, 0))))
    return found


def round_record(stats: dict[str, Any]) -> dict[str, Any]:
    """GAMA-Bench's record of a round from the store's round stats (imported, or a games-layer line)."""
    groups = stats.get("groups")
    if isinstance(groups, list) and groups:
        return dict(groups[0].get("data") or {})
    return stats


def _models(experiment: RecordedExperiment) -> dict[int, str]:
    models: dict[int, set[str]] = defaultdict(set)
    for run, model in experiment.store.rows("SELECT DISTINCT run, model FROM agents"):
        models[run].add(str(model))
    return {run: "+".join(sorted(names)) for run, names in models.items()}


def score_table(scores: Iterable[RunScore]) -> list[dict[str, Any]]:
    """One row per model, game, version and condition: runs, mean score, its standard deviation
    over runs (sample; None for one run)."""
    groups: dict[tuple[str, str, str, str], list[RunScore]] = defaultdict(list)
    for entry in scores:
        groups[entry.model, entry.game, entry.version, entry.condition].append(entry)
    rows = []
    for (model, game, version, condition), entries in sorted(groups.items()):
        values = [entry.score for entry in entries]
        rows.append({"model": model, "game": game, "version": version, "condition": condition, "runs": len(values),
                     "score": round(mean(values), 4),
                     "std": round(stdev(values), 4) if len(values) > 1 else None,
                     "fallbacks": sum(entry.fallbacks for entry in entries)})
    return rows


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
