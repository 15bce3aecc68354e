"""Reading finished runs back from an output directory's store, as plain data for analysis.

An output directory holds one experiment (`agentsim.db`); a search (critical mass) holds one
experiment per sub-directory. `find_experiments(root)` finds them all, and each
`RecordedExperiment` answers what every game's analysis asks: its parameters and runs, the
per-round statistics and run summaries, the scenario rebuilt from the recorded parameters (so
that a call's compact context decodes back into what the agent saw), and LLM usage by model.
A game's own questions (the naming game's first choices, consensus names, strategies) live in
its family's package (agentsim/games/naming/recorded.py), never here.

A results directory is data: reading one runs none of the code it names. The recorded
scenario class is imported only from the package of a registered game family
(agentsim/games/__init__.py: built in, or an installed `agentsim.games` entry point) lying
outside the directory, checked before any of it runs, never from a module the results merely
name (the current directory's, the standard library's); a class defined in a scenario file (recorded as
`agentsim_scenarios.FILE.Class`) is used only once the user has named that file
(`load_scenario_files`, the analysis commands' `--scenario FILE`). The recorded
`scenario_file` is never run: `unresolved` says in one line what to pass instead.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import UserError
from ..gamekit.engine import GameEngine
from ..gamekit.game import Game
from ..games import discover
from ..scenario import Scenario, scenario_class
from ..scenario_files import load_scenario
from ..store import DATABASE, Store, recorded_level

ANALYSIS_DIR = "analysis"  # measurement outputs (JSON) that report sections read


def find_experiments(root: Path | str) -> list[RecordedExperiment]:
    """Every experiment recorded under `root` (itself or any sub-directory), in path order;
    an experiment that ran a grid of `VARIANTS` is one RecordedExperiment per cell, so that no
    figure pools runs of different conditions."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"'{root}' is not a directory; give the output directory of a run (e.g. results/naming_game/TIMESTAMP)")
    found = []
    for path in sorted({path.parent for path in root.rglob(DATABASE)}):
        where = path.relative_to(root).as_posix() if path != root else (root.resolve().name or ".")
        whole = RecordedExperiment(path, where=where)
        variants = whole.experiment.get("variants") or []
        if len(variants) < 2:
            found.append(whole)
            continue
        whole.close()
        found.extend(RecordedExperiment(path, where=where, variant=index, variants=len(variants))
                     for index in range(len(variants)))
    return found


def read_artifacts(root: Path | str) -> dict[str, list[tuple[Path, Any]]]:
    """Measurement outputs saved under `root` (`analysis/<kind>.json`), by kind."""
    found: dict[str, list[tuple[Path, Any]]] = defaultdict(list)
    for path in sorted(Path(root).rglob(f"{ANALYSIS_DIR}/*.json")):
        found[path.stem].append((path, json.loads(path.read_text(encoding="utf-8"))))
    return dict(found)


def save_artifact(directory: Path | str, kind: str, document: Any) -> Path:
    """Write a measurement's output where `read_artifacts` and the report find it."""
    path = Path(directory) / ANALYSIS_DIR / f"{kind}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=_jsonable), encoding="utf-8")
    return path


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


@runtime_checkable
class RecordsTemplates(Protocol):
    """A scenario whose prompt templates are recorded with the experiment (the naming game's,
    SIGN's): rebuilt with the recorded text, not with what today's files say."""

    def with_recorded_templates(self, templates: Mapping[str, str]) -> Any: ...


@dataclass
class RecordedExperiment:
    """One experiment's finished runs; with `variant`, only the runs of that cell of its grid
    (replicate k ran variant k mod `variants`)."""

    directory: Path
    where: str = ""  # the directory, relative to the root the report was asked for
    variant: int | None = None
    variants: int = 0
    _store: Store | None = field(default=None, init=False, repr=False)
    memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)  # what a game's analysis reads once

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store.read_only(self.directory)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    @cached_property
    def experiment(self) -> dict[str, Any]:
        return self.store.experiment()

    @property
    def scenario_name(self) -> str:
        return str(self.experiment.get("scenario", ""))

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.experiment.get("params") or {}) | self.variant_params

    @property
    def standin(self) -> dict[str, Any]:
        """The stand-in's settings the experiment recorded (they change its answers)."""
        return dict(self.experiment.get("standin") or {})

    @property
    def variant_params(self) -> dict[str, Any]:
        """The parameters this cell of the grid changes ({} outside a grid)."""
        if self.variant is None:
            return {}
        return dict((self.experiment.get("variants") or [])[self.variant])

    @property
    def label(self) -> str:
        """Where the experiment lies and, in a grid, which cell: what legends and titles name."""
        cell = ", ".join(f"{key}={_short(value)}" for key, value in self.variant_params.items())
        where = self.where or self.directory.name
        return f"{where} [{cell}]" if cell else where

    @property
    def rule_agents(self) -> bool:
        """Whether every agent is a rule (theory baselines), not a language model or the stand-in."""
        kinds = {kind for (kind,) in self.store.rows("SELECT DISTINCT kind FROM agents")}
        return bool(kinds) and "llm" not in kinds

    @property
    def backend(self) -> str:
        return str(self.experiment.get("backend", ""))

    @property
    def record(self) -> str:
        """What its runs recorded (`--record`: moves, rounds or summary; store.RECORD_LEVELS)."""
        return recorded_level(self.experiment)

    @cached_property
    def runs(self) -> list[dict[str, Any]]:
        return [row for row in self.store.runs() if row["status"] == "done"
                and (self.variant is None or row["replicate"] % self.variants == self.variant)]

    @property
    def unresolved(self) -> str | None:
        """Why the scenario's class cannot be used (one line naming what to pass), or None."""
        path = str(self.experiment.get("scenario_class", ""))
        if not path or _import_class(path, self.directory) is not None:
            return None
        file = str(self.experiment.get("scenario_file") or "")  # absolute since issue 30; a name only, before
        named = (f" (when the runs were recorded: --scenario {file})" if Path(file).is_absolute() else
                 f" ({Path(file).name} when the runs were recorded)" if file else "")
        return (f"the scenario class {path} of '{self.where or self.directory}' does not import from an installed "
                f"package, and agentsim runs no code a results directory names; pass --scenario FILE, the scenario "
                f"file that defines it{named}")

    @cached_property
    def scenario(self) -> Any:
        """The scenario that ran, rebuilt from its recorded class and parameters (its name
        pool drawn as it was, its prompt template's recorded text), or None when its class
        cannot be used safely (`unresolved` says why)."""
        return rebuild_scenario(self.experiment, self.directory, self.variant_params)

    @property
    def names(self) -> tuple[str, ...]:
        scenario = self.scenario
        if scenario is not None and hasattr(scenario, "names"):
            return tuple(scenario.names)
        return tuple(self.params.get("names") or ())

    # --- per round -----------------------------------------------------------------------
    @cached_property
    def round_stats(self) -> dict[int, list[dict[str, Any]]]:
        """Each finished run's per-round tallies, in round order."""
        done = {row["run"] for row in self.runs}
        stats: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for run, _round, text in self.store.rows("SELECT run, round, stats FROM rounds ORDER BY run, round"):
            if run in done:
                stats[run].append(json.loads(text))
        return dict(stats)

    def round_matrix(self, key: str) -> np.ndarray:
        """Runs x rounds of one per-round statistic (`key` of the rounds' stats, e.g. a naming
        game's `success_rate`). A run that stopped early (consensus) keeps its last value
        afterwards, as the paper's averages do for runs that have converged."""
        rows = [[entry.get(key) for entry in entries] for entries in self.round_stats.values()]
        if not rows:
            return np.zeros((0, 0))
        width = max(len(row) for row in rows)
        matrix = np.full((len(rows), width), np.nan)
        for index, row in enumerate(rows):
            values = [np.nan if value is None else float(value) for value in row]
            matrix[index, : len(values)] = values
            if values:
                last = next((value for value in reversed(values) if not np.isnan(value)), np.nan)
                matrix[index, len(values):] = last
        return matrix

    def summaries(self) -> list[dict[str, Any]]:
        return [row["summary"] for row in self.runs]

    # --- usage -------------------------------------------------------------------------------
    def usage_by_model(self) -> list[dict[str, Any]]:
        """Calls, tokens, invalid replies (a reply the game could not use), errors (a call
        that failed: no reply) and latency percentiles per model (from every
        recorded call), its agents' decisions and how many of them fell back (no reply gave
        the action), with cost where the run summaries carry one."""
        rows = self.store.rows(
            "SELECT d.run, a.model, d.prompt_tokens, d.completion_tokens, d.latency_us, d.error, d.reply IS NOT NULL "
            "FROM decisions d "
            "JOIN agents a ON a.run = d.run AND a.agent = d.agent WHERE d.reply IS NOT NULL OR d.error IS NOT NULL")
        done = {row["run"] for row in self.runs}
        by_model: dict[str, dict[str, Any]] = {}
        for run, model, prompt_tokens, completion_tokens, latency_us, error, replied in rows:
            if run not in done:
                continue
            entry = by_model.setdefault(model, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "errors": 0,
                                                "invalid_replies": 0, "decisions": 0, "fallbacks": 0, "latencies": []})
            entry["calls"] += 1
            entry["prompt_tokens"] += prompt_tokens or 0
            entry["completion_tokens"] += completion_tokens or 0
            entry["errors"] += error is not None and not replied  # the call failed
            entry["invalid_replies"] += error is not None and bool(replied)  # a reply the game could not use
            entry["latencies"].append((latency_us or 0) / 1e6)
        for run, model, decisions, fallbacks in self.store.rows(
                "SELECT d.run, a.model, COUNT(*), SUM(d.fallback IS 1) FROM decisions d JOIN agents a "
                "ON a.run = d.run AND a.agent = d.agent WHERE d.payoff IS NOT NULL AND a.kind = 'llm' GROUP BY d.run, a.model"):
            if run in done and model in by_model:
                entry = by_model[model]
                entry["decisions"] += decisions
                entry["fallbacks"] += fallbacks
        costs: dict[str, float] = defaultdict(float)
        cached: dict[str, dict[str, int]] = defaultdict(lambda: {"cached_prompt_tokens": 0, "cache_write_tokens": 0})
        for summary in self.summaries():
            for label, usage in (summary.get("usage_by_backend") or {}).items():
                for key in ("cost_usd", "cost"):
                    if isinstance(usage.get(key), (int, float)):
                        costs[label] += usage[key]
                for key in ("cached_prompt_tokens", "cache_write_tokens"):  # runs recorded before prompt caching have none
                    if isinstance(usage.get(key), int):
                        cached[label][key] += usage[key]
        table = []
        for model, entry in sorted(by_model.items()):
            latencies = np.asarray(entry["latencies"])
            table.append({
                "model": model, **entry, **cached[model],
                "latency_p50_s": float(np.percentile(latencies, 50)) if latencies.size else 0.0,
                "latency_p95_s": float(np.percentile(latencies, 95)) if latencies.size else 0.0,
                "cost_usd": costs.get(model),
            })
        return table


def rebuild_scenario(experiment: Mapping[str, Any], directory: Path, changes: Mapping[str, Any] | None = None) -> Any:
    """The scenario an experiment's store records (its `experiment` table), with `changes` to
    its parameters (a grid cell's), rebuilt from its class and parameters (its name pool drawn
    as it was, its prompt template's recorded text); None when its class cannot be used safely
    from `directory` (`RecordedExperiment.unresolved` says why)."""
    cls = _import_class(str(experiment.get("scenario_class", "")), directory)
    if cls is None:
        return None
    params = {key: tuple(value) if isinstance(value, list) else value
              for key, value in (dict(experiment.get("params") or {}) | dict(changes or {})).items()}
    known = cls.Params.field_names()
    settings = type(cls.standin)
    recorded = dict(experiment.get("standin") or {})
    standin = settings(**{key: value for key, value in recorded.items() if key in settings.field_names()})
    scenario = cls(cls.Params(**{key: value for key, value in params.items() if key in known}), standin=standin)
    scenario = scenario.for_experiment(int(experiment.get("seed", 0)))
    if isinstance(scenario, RecordsTemplates):  # its prompts as they were sent, not as today's files word them
        scenario = scenario.with_recorded_templates(experiment.get("prompt_templates") or {})
    return scenario


def _short(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "/".join(map(str, value)) if len(value) <= 4 else f"{len(value)} values"
    return f"{value:g}" if isinstance(value, float) else str(value)


def load_scenario_files(files: list[str] | None) -> None:
    """Load the scenario files the user named (`--scenario FILE`): their classes are then
    the ones recorded experiments name as `agentsim_scenarios.FILE.Class`."""
    for file in files or ():
        load_scenario(file)


def require_scenarios(experiments: list[RecordedExperiment]) -> None:
    """A UserError naming what to pass, if an experiment's scenario class cannot be used."""
    for experiment in experiments:
        why = experiment.unresolved
        if why is not None:
            raise UserError(why)


def _import_class(path: str, directory: Path) -> type[Scenario[Any, Any, Any]] | None:
    """The Scenario subclass `path` names (for a layer game's class, its engine's), from a
    module already loaded (a scenario file the user named, a class this process defined) or
    from a registered game family's package (imported from outside `directory`); None
    otherwise: a module the results merely name is never imported (`this`, a file beside
    them, anything on sys.path)."""
    module_name, _, name = path.rpartition(".")
    if not module_name:
        return None
    module = sys.modules.get(module_name)
    if module is None and _in_family(module_name):
        module = _import_outside(module_name, directory.resolve())
    cls = getattr(module, name, None) if module is not None else None
    return scenario_class(cls) if isinstance(cls, type) else None  # (a layer game's class: its engine's)


def records_a_bare_game(experiment: Mapping[str, Any], directory: Path) -> bool:
    """Whether the runs name an engine around the bare `Game` as their class (the layer's
    `RecordedGame`, GAMA-Bench's `RecordedGamaGame`): their game's own rules, its score among
    them, are in the scenario file the runs were started with, not in that class."""
    cls = _import_class(str(experiment.get("scenario_class", "")), directory)
    return cls is not None and issubclass(cls, GameEngine) and cls.game_class is Game


def _in_family(module_name: str) -> bool:
    """Whether `module_name` lies in the package of a registered game family (built in, or
    installed with an `agentsim.games` entry point): the only modules a recorded class is
    imported from."""
    return any(module_name == package or module_name.startswith(package + ".") for package in _family_packages())


def _family_packages() -> set[str]:
    """The packages of the registered game families: `agentsim.games.NAME` for each, and the
    package holding each module a family declares (its commands, report sections, checkpoint
    classes), for a family installed from elsewhere."""
    packages: set[str] = set()
    for family in discover().values():
        packages.add(f"agentsim.games.{family.name}")
        declared = [family.commands or "", *family.report_sections,
                    *(entry.partition(":")[0] if isinstance(entry, str) else entry.__module__
                      for entry in family.checkpoint_classes)]
        for module in declared:
            package = module.rpartition(".")[0]
            if package and package not in ("agentsim", "agentsim.games"):
                packages.add(package)
    return packages


def _import_outside(module_name: str, directory: Path) -> Any:
    """Import `module_name` only if it and each package above it lie outside `directory`,
    checked (by `find_spec`, which runs nothing) before each is imported."""
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        prefix = ".".join(parts[:depth])
        if prefix in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(prefix)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        places = [spec.origin] if spec.origin and spec.has_location else []
        places.extend(spec.submodule_search_locations or ())
        if any(Path(place).resolve().is_relative_to(directory) for place in places):
            return None
        try:
            importlib.import_module(prefix)
        except Exception:  # an installed module that fails to import names no usable class
            return None
    return sys.modules.get(module_name)
