"""`python -m agentsim watch DIR`: a web page that follows a results directory while its runs
record and after they end, for someone whose experiment runs for hours on another machine or
who works in a notebook, where the terminal's live view is not at hand.

The page (watch.html, its script watch.js and its style watch.css, nothing from outside: the
machine may have no network) asks `state.json` every second; the server answers from the
stores under DIR, read-only, as one more SQLite reader beside the run's one writer. Each run's
figures are the family's own (its readout's `live_figures`, what the terminal view shows, and
its `views`: the charts its paper plots, agentsim/views.py), computed from the run's last
checkpoint and the store's `rounds` lines up to it: the model is rebuilt from its recorded
scenario and seed and restored, never stepped. So every family is shown from what the store
holds, and nothing is asked of a model. A click on a point of a chart asks `calls.json` for that
round's (month's, generation's) prompts and replies, as `transcript` prints them.

Nothing under DIR is written, the database's SQLite side files included: each read opens the
database as every reader does (agentsim/sqlite_reading.py: `immutable=1` once no writer holds
it, the `-shm` mapped read-only beside a live or killed writer) and closes it at once, so that
the writer's close, which removes the side files when it is the last connection, is rarely shared.

What it reads is data, and shown as data: every stored value reaches the page as JSON and is
set as text there (never parsed as HTML); the page's Content-Security-Policy allows no inline
script, no event-handler attribute and nothing from another origin, and a request whose `Host`
is not this server's loopback address is refused (a DNS-rebinding page cannot read it). One
experiment whose store is damaged is shown as damaged beside the others; a damaged run beside
its experiment's other runs.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import math
import os
import shlex
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from .analysis.recorded import RecordedExperiment, rebuild_scenario, records_a_bare_game
from .analysis.transcript import call_text, calls
from .llm.providers import all_on_the_stand_in
from .scenario_files import load_scenario
from .sqlite_reading import open_read_only
from .store import DATABASE, recorded_level
from .views import Views, combine, compare, store_round, thinned

PAGE = "watch.html"
ASSETS = {"/watch.js": ("watch.js", "text/javascript"), "/watch.css": ("watch.css", "text/css")}
LOCK = ".agentsim.lock"  # session.LOCK: the writer's flock on the directory (not imported: the runner is heavy)
RUNS_PER_READING = 8  # runs whose figures one reading rebuilds, at most
SHOWN_CARDS = 12  # runs drawn as cards (running first); the table lists every run
MAX_GRAPH_NODES = 400  # a larger graph is drawn from a sample of this many agents (a connected piece of it)
MAX_CALLS = 60  # calls one click shows; the rest are counted, with the transcript command that prints them
STATUSES = ("running", "done", "stopped", "failed", "interrupted", "budget_spent")
# Content-Security-Policy: the page's own script and style only; no inline script, no event
# handler attribute, no style attribute parsed from markup, nothing from another origin.
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}


@contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection that reads `path` and writes nothing beside it (see the module's docstring),
    closed on leaving."""
    connection = open_read_only(path)
    try:
        connection.execute("PRAGMA query_only=1")
        yield connection
    finally:
        connection.close()


def writer_active(directory: Path) -> bool | None:
    """Whether an agentsim holds the directory's lock now (it is recording), read from the
    kernel's table of locks (/proc/locks), which testing the lock would disturb; None where
    that table cannot be read (not Linux)."""
    try:
        stat = (directory / LOCK).stat()
    except OSError:
        return False  # never locked: no agentsim has recorded here yet
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    return any(line.split()[1:2] == ["FLOCK"] and device in line.split() for line in table.splitlines())


def last_write(directory: Path) -> float | None:
    """When the store was last written (its file's or its WAL's modification time, read from
    the file system, which reading does not change): no record is later."""
    times = []
    for name in (DATABASE, f"{DATABASE}-wal"):
        try:
            times.append((directory / name).stat().st_mtime)
        except OSError:
            pass
    return max(times) if times else None


class Damaged(ValueError):
    """A stored value the page cannot use (a tampered or damaged store): shown, never raised."""


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 240 else text[:237] + "..."


@dataclass
class RunCache:
    """What a run's last reading computed, and what to compute again only when it changes."""

    key: tuple[Any, ...] = ()
    read_at: float = 0.0
    seen_at: float | None = None  # when this reading first saw the run's current checkpoint (wall clock)
    shown: dict[str, Any] = field(default_factory=dict)
    views: Views | None = None
    layout: dict[int, tuple[float, float]] | None = None
    edges: list[tuple[int, int]] = field(default_factory=list)
    sample: int = 0  # agents in the whole graph when the drawing is a sample
    choices: dict[int, str] = field(default_factory=dict)
    choices_from: int = 0
    rounds: dict[int, dict[str, Any]] = field(default_factory=dict)
    rounds_from: int = 0
    damaged_rounds: int = 0


class Followed:
    """One experiment's store under the watched directory: its scenario (rebuilt once) and
    each run's figures (computed again when its checkpoint or status changes)."""

    def __init__(self, directory: Path, where: str, root: Path) -> None:
        self.directory = directory
        self.where = where
        self.root = root
        self.scenarios: dict[Any, Any] = {}
        self.runs: dict[int, RunCache] = {}
        self.unresolved: str | None = None
        self.loaded_from: str | None = None
        self.experiment: dict[str, Any] = {}
        self.seeds: dict[int, tuple[int, int]] = {}  # run -> (seed, replicate)

    def read(self) -> dict[str, Any]:
        """The experiment as the page shows it; a store that cannot be read this time (a page
        being written) or is damaged says so in one line, beside the other experiments."""
        try:
            return self._read()
        except sqlite3.DatabaseError as error:  # a page being written as it was read: the next reading
            return {"where": self.where, "error": one_line(error), "runs": []}
        except Exception as error:  # a damaged store: this experiment only
            return {"where": self.where, "damaged": f"its store is damaged ({type(error).__name__}: {one_line(error)})",
                    "runs": []}

    def _read(self) -> dict[str, Any]:
        with read_only(self.directory / DATABASE) as connection:
            tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"experiment", "runs", "checkpoints"} <= tables:
                return {"where": self.where, "waiting": True, "runs": []}
            experiment, damaged_keys = {}, []
            for key, value in connection.execute("SELECT key, value FROM experiment"):
                try:
                    experiment[str(key)] = json.loads(value)
                except (TypeError, ValueError):
                    damaged_keys.append(str(key))
            self.experiment = experiment
            rows = [_checked_row(row) for row in _dicts(connection.execute(
                "SELECT run, replicate, seed, status, stop_reason, started, finished, summary FROM runs ORDER BY run"))]
            marks = dict(connection.execute("SELECT run, t FROM checkpoints").fetchall())
            good = [row for row in rows if "damaged" not in row]
            self.seeds = {row["run"]: (row["seed"], row["replicate"]) for row in good}
            # The runs whose checkpoint or status changed, the longest unchanged first: a reading
            # rebuilds at most RUNS_PER_READING of them (ninety runs of a grid at once would
            # take the CPU the runs need), the others at the next readings.
            keys = {row["run"]: (marks.get(row["run"]), row["status"], row["stop_reason"]) for row in good}
            now = time.time()
            for row in good:
                cache = self.runs.setdefault(row["run"], RunCache())
                if cache.key[:1] != keys[row["run"]][:1]:
                    cache.seen_at = now if cache.key else None  # a change seen happening; else unknown
            stale = sorted((run for run, key in keys.items() if self.runs[run].key != key),
                           key=lambda run: self.runs[run].read_at)
            changed = {}
            for run in stale[:RUNS_PER_READING]:
                blob = connection.execute("SELECT state FROM checkpoints WHERE run = ?", (run,)).fetchone()
                changed[run] = blob[0] if blob else None
                cache = self.runs[run]
                _read_rounds(connection, run, cache)
                if cache.layout is not None and blob:
                    _read_choices(connection, run, cache)
        recording = writer_active(self.directory)
        written = last_write(self.directory)
        shown = []
        for row in rows:
            if "damaged" in row:
                shown.append(row)
                continue
            cache = self.runs[row["run"]]
            if row["run"] in changed:
                try:
                    cache.shown, cache.views = self._figures(experiment, row, changed[row["run"]], cache)
                except Exception as error:  # one run's figures that cannot be rebuilt: the others still show
                    cache.shown, cache.views = {"error": f"its figures could not be rebuilt ({type(error).__name__}: "
                                                         f"{one_line(error)})"}, None
                cache.key, cache.read_at = keys[row["run"]], time.monotonic()
            shown.append(self._run(row, cache, recording, written, stale=cache.key != keys[row["run"]]))
        cards = _cards(shown)
        for run in shown:
            known = self.runs.get(run["run"]) if isinstance(run["run"], int) else None
            if run["run"] in cards and known is not None and known.views is not None:
                run["views"] = thinned(known.views)
        everything: list[tuple[int, bool, Views, str]] = []
        for run in shown:
            views = self.runs[run["run"]].views if isinstance(run["run"], int) else None
            if views is not None:
                everything.append((run["run"], run.get("status") != "running", views, run.get("group") or run.get("cell", "")))
        planned = experiment.get("runs")
        return {
            "where": self.where, "scenario": experiment.get("scenario"), "backend": experiment.get("backend"),
            "stand_in": all_on_the_stand_in(str(experiment.get("backend") or "")),
            "seed": experiment.get("seed"), "planned": planned if isinstance(planned, int) else len(rows),
            "record": recorded_level(experiment),
            "recording": recording, "unresolved": self.unresolved, "loaded_from": self.loaded_from,
            "damaged": f"unreadable experiment values: {', '.join(damaged_keys)}" if damaged_keys else None,
            "names": _names(everything), "unit": next((views.unit for _, _, views, _ in everything), "round"),
            "combined": combine(everything), "comparison": compare(everything),
            "cards": cards, "runs": shown,
            "resume": f"python -m agentsim --resume --out {shlex.quote(str(self.directory))}",
        }

    def _scenario(self, experiment: dict[str, Any], replicate: int) -> Any:
        variants = experiment.get("variants") or []
        variant = replicate % len(variants) if variants else None
        if variant not in self.scenarios:
            changes = dict(variants[variant]) if variant is not None else {}
            scenario = rebuild_scenario(experiment, self.directory, changes)
            if scenario is None or records_a_bare_game(experiment, self.directory):
                found = self._from_recorded_file(experiment, changes)
                scenario = found if found is not None else scenario
            if scenario is None:
                recorded = RecordedExperiment(self.directory, where=self.where)
                recorded.__dict__["experiment"] = experiment  # (its cached property: read here, not from a writable Store)
                self.unresolved = recorded.unresolved
            self.scenarios[variant] = scenario
        return self.scenarios[variant]

    def _from_recorded_file(self, experiment: dict[str, Any], changes: dict[str, Any]) -> Any:
        """The scenario from the file the runs were started with, where it is still there
        (`usable_scenario_file`: outside DIR, defining the recorded class, of the recorded
        digest); None otherwise, and nothing of it run."""
        file = usable_scenario_file(experiment, self.root)
        if file is None:
            return None
        try:
            scenario, module = load_scenario(file)
        except Exception as error:  # the file's own problem: the page says so, the rest still shows
            self.unresolved = f"the recorded scenario file {file} could not be loaded ({one_line(error)}); pass --scenario FILE"
            return None
        cls = type(scenario)
        recorded = dict(experiment) | {"scenario_class": f"{module.__name__}.{cls.__name__}"}
        rebuilt = rebuild_scenario(recorded, self.directory, changes)
        if rebuilt is not None:
            self.loaded_from = str(file)
        return rebuilt

    def _figures(self, experiment: dict[str, Any], row: dict[str, Any], blob: bytes | None,
                 cache: RunCache) -> tuple[dict[str, Any], Views | None]:
        """The run's figures at its last checkpoint: the family's readout's `live_figures` and
        `views`, its calls, and, for a run on a graph, the graph with each agent's latest choice.
        Before its first checkpoint, the run as it starts (its cell, its topology, its limits)."""
        scenario = self._scenario(experiment, row["replicate"])
        if scenario is None:
            return {}, None
        from .model import PopulationModel  # lazy: Mesa, only once a run's figures are rebuilt

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a page to look at: a family's notice is for the run's own output
            model = PopulationModel(scenario, seed=row["seed"], replicate=row["replicate"], run_id=row["run"])
            if blob is not None:
                model.restore(blob)
            figures = model.readout.live_figures(model)
            views = model.readout.views(model, cache.rounds if blob is not None else {})
        if blob is None:
            return {"starting": True}, views
        usage = model.usage.total()
        shown: dict[str, Any] = {
            "figures": asdict(figures) | {"shares": dict(figures.shares)},
            "rounds": model.rounds_done, "max_rounds": scenario.max_rounds(), "interactions": model.completed,
            "usage": usage.as_dict() | {"in_flight": 0}, "round_base": int(getattr(scenario, "round_base", 0)),
        }
        neighbours = interaction_graph(model)
        if neighbours is not None and len(neighbours) > 0:
            if cache.layout is None:
                _lay_out(cache, neighbours)
                with read_only(self.directory / DATABASE) as connection:
                    _read_choices(connection, row["run"], cache)
            shown["graph"] = True
        return shown, views

    def _run(self, row: dict[str, Any], cache: RunCache, recording: bool | None, written: float | None, *,
             stale: bool) -> dict[str, Any]:
        summary = row["summary"]
        status = row["status"]
        variants = self.experiment.get("variants") or []
        variant = variants[row["replicate"] % len(variants)] if isinstance(variants, list) and variants else {}
        run: dict[str, Any] = {
            "run": row["run"], "seed": row["seed"], "replicate": row["replicate"], "status": status,
            "stop_reason": row["stop_reason"],
            "cell": ", ".join(f"{key}={value}" for key, value in variant.items()) if isinstance(variant, dict) else "",
        }
        if row.get("summary_damaged"):
            run["note"] = "its stored summary is damaged; its figures come from its checkpoint"
        ended_at = _time(row["finished"])
        if status == "running" and recording is False:
            # Recorded as running, but no agentsim holds the directory: killed (or its machine
            # stopped). Its figures are its last record's; nothing grows.
            run["status"] = "not running"
            run["resume"] = f"python -m agentsim --resume --out {shlex.quote(str(self.directory))}"
            ended_at = written
            run["last_record"] = _iso(written)
        as_of = ended_at if status != "running" and ended_at is not None else (
            min(filter(None, (cache.seen_at, written))) if (cache.seen_at or written) else None)
        run["as_of"] = _iso(as_of)
        run["figures_stale"] = stale  # the status moved on since these figures were computed
        shown = dict(cache.shown)
        if set(shown) <= {"error"} and summary:  # the figures cannot be rebuilt: what the summary says
            shown |= {"rounds": summary.get("rounds"), "interactions": summary.get("interactions"),
                      "usage": {key: summary.get(key) for key in ("calls", "fallbacks", "invalid_replies", "reasks",
                                                                 "cost_usd", "cache_hits", "retries")}}
        if shown.pop("graph", False) and cache.layout is not None:
            shown["graph"] = {"nodes": [[node, x, y, cache.choices.get(node)] for node, (x, y) in sorted(cache.layout.items())],
                              "edges": cache.edges, "of": cache.sample or len(cache.layout)}
        views = cache.views
        if views is not None:
            run |= {"unit": views.unit, "done": views.done, "total": views.total, "state": views.state,
                    "group": views.group, "stats": [[stat.label, stat.text] for stat in views.stats[:4]]}
        elapsed = _seconds(_time(row["started"]), ended_at)
        calls = (shown.get("usage") or {}).get("calls")
        if elapsed and elapsed >= 3 and isinstance(calls, (int, float)):  # (the store's times are whole seconds)
            shown["calls_per_second"] = calls / elapsed
        shown["elapsed_s"] = elapsed
        return run | shown

    def calls(self, run: int, x: float) -> dict[str, Any]:
        """The prompts and replies of the point at `x` of run `run`'s charts (a round, a month, a
        generation), as `transcript` prints them, fallbacks and re-asks marked."""
        cache = self.runs.get(run)
        if cache is None or run not in self.seeds:
            raise Damaged(f"no run {run} in {self.where}")
        seed, replicate = self.seeds[run]
        scenario = self._scenario(self.experiment, replicate)
        if scenario is None or scenario.codec is None:
            raise Damaged(self.unresolved or "this experiment's prompts cannot be rebuilt here")
        base = int(getattr(scenario, "round_base", 0))
        first, last = store_round(cache.views or Views(), x, base)
        unit = cache.views.unit if cache.views is not None else "round"
        shown: list[dict[str, Any]] = []
        more = 0
        with read_only(self.directory / DATABASE) as connection:
            reader = _Reader(connection, {run: seed})
            for round_ in range(first, last + 1):
                for call in calls(reader, scenario, run=run, round_=round_ + base):
                    if len(shown) >= MAX_CALLS:
                        more += 1
                        continue
                    shown.append({"text": call_text(call, seed), "attempt": call.attempt, "fallback": call.fallback,
                                  "reask": call.attempt > 0, "invalid": call.error is not None, "round": call.round,
                                  "agent": call.agent})
        command = (f"python -m agentsim transcript {shlex.quote(str(self.directory))} --run {run} --round "
                   + (str(first + base) if first == last else f"R (R from {first + base} to {last + base})"))
        return {"where": self.where, "run": run, "unit": unit, "x": x, "rounds": [first + base, last + base],
                "calls": shown, "more": more, "command": command}


class _Reader:
    """What `analysis.transcript.calls` reads of an experiment, from watch's read-only connection."""

    variant = None
    variants = 0

    def __init__(self, connection: sqlite3.Connection, seeds: dict[int, int]) -> None:
        self.connection, self.seeds = connection, seeds

    @property
    def store(self) -> _Reader:
        return self

    def runs(self) -> list[dict[str, Any]]:
        return [{"run": run, "seed": seed, "replicate": 0} for run, seed in self.seeds.items()]

    def rows(self, sql: str, parameters: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        return iter(self.connection.execute(sql, parameters).fetchall())


def _checked_row(row: dict[str, Any]) -> dict[str, Any]:
    """A `runs` row with the types the page needs, or one that says which value is damaged."""
    problems = [name for name in ("run", "replicate", "seed") if not (isinstance(row.get(name), int)
                                                                     and not isinstance(row.get(name), bool))]
    if isinstance(row.get("replicate"), int) and row["replicate"] < 0:
        problems.append("replicate")
    if problems:
        return {"run": str(row.get("run")), "status": "damaged",
                "damaged": f"its stored {', '.join(problems)} {'is' if len(problems) == 1 else 'are'} not usable "
                           f"({', '.join(repr(row.get(name))[:40] for name in problems)})"}
    checked = dict(row)
    if not (isinstance(row.get("status"), str) and row["status"] in STATUSES):
        checked["status"] = "damaged"
    checked["stop_reason"] = row["stop_reason"] if isinstance(row.get("stop_reason"), str) else None
    summary: Any = {}
    if row.get("summary"):
        try:
            summary = json.loads(row["summary"])
        except (TypeError, ValueError):
            summary = None
        if not isinstance(summary, dict):
            checked["summary_damaged"] = True
            summary = {}
    checked["summary"] = summary
    return checked


def _read_rounds(connection: sqlite3.Connection, run: int, cache: RunCache) -> None:
    """The run's `rounds` lines not read yet (a line, once written with its checkpoint, stays)."""
    for round_, stats in connection.execute("SELECT round, stats FROM rounds WHERE run = ? AND round >= ? ORDER BY round",
                                            (run, cache.rounds_from)).fetchall():
        if not isinstance(round_, int):
            cache.damaged_rounds += 1
            continue
        try:
            line = json.loads(stats)
        except (TypeError, ValueError):
            line = None
        if isinstance(line, dict):
            cache.rounds[round_] = line
        else:
            cache.damaged_rounds += 1
        cache.rounds_from = max(cache.rounds_from, round_ + 1)


def _read_choices(connection: sqlite3.Connection, run: int, cache: RunCache) -> None:
    """Each drawn agent's latest move that a reply gave (a fallback is never a choice), read
    from where the last reading stopped."""
    rows = connection.execute("SELECT agent, action, MAX(t) FROM decisions WHERE run = ? AND t >= ? AND payoff IS NOT NULL "
                              "AND fallback IS NOT 1 GROUP BY agent", (run, cache.choices_from)).fetchall()
    drawn = cache.layout or {}
    for agent, action, t in rows:
        if isinstance(agent, int) and agent in drawn and action is not None:
            cache.choices[agent] = str(action)
        if isinstance(t, int):
            cache.choices_from = max(cache.choices_from, t)


def _lay_out(cache: RunCache, neighbours: list[list[int]]) -> None:
    """The graph's drawing: every agent of a small graph; of a large one, a connected sample
    of MAX_GRAPH_NODES agents (breadth first from agent 0), said to be a sample."""
    import networkx as nx

    nodes = list(range(len(neighbours)))
    if len(nodes) > MAX_GRAPH_NODES:
        seen, queue = {0}, [0]
        while queue and len(seen) < MAX_GRAPH_NODES:
            for other in neighbours[queue.pop(0)]:
                if other not in seen and len(seen) < MAX_GRAPH_NODES:
                    seen.add(other)
                    queue.append(other)
        nodes = sorted(seen)
        cache.sample = len(neighbours)
    kept = set(nodes)
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((a, b) for a in nodes for b in neighbours[a] if a < b and b in kept)
    positions = nx.spring_layout(graph, seed=0)  # (Kamada-Kawai draws a lattice better, at 20 times the time)
    cache.layout = {int(node): (float(x), float(y)) for node, (x, y) in positions.items()}
    cache.edges = [(int(a), int(b)) for a, b in graph.edges()]


def _cards(runs: list[dict[str, Any]]) -> list[Any]:
    """The runs drawn as cards, in the table's order: running ones chosen first, then by
    number (SHOWN_CARDS at most); a damaged run is shown too, where there is room."""
    ordered = sorted(runs, key=lambda run: (run.get("status") not in ("running", "not running"),
                                            run["run"] if isinstance(run["run"], int) else math.inf))
    chosen = {id(run) for run in ordered[:SHOWN_CARDS]}
    return [run["run"] for run in runs if id(run) in chosen]


def _names(everything: list[tuple[int, bool, Views, str]]) -> list[str]:
    """The game's names in its order, the same for every run (a name keeps its colour)."""
    names: list[str] = []
    for _, _, views, _ in everything:
        names += [name for name in views.names if name not in names]
    return names


def usable_scenario_file(experiment: dict[str, Any], root: Path) -> Path | None:
    """The scenario file the runs recorded, where `watch` may load it without `--scenario`:
    an absolute path to a `.py` file that is still there, outside the watched directory (a
    results directory never brings code of its own), whose text (read, not run) defines the
    recorded class, and whose content matches the digest recorded with the runs (runs
    recorded before digests were need `--scenario FILE`). None otherwise."""
    text = experiment.get("scenario_file")
    if not isinstance(text, str) or not text.endswith(".py") or not Path(text).is_absolute():
        return None
    file = Path(text)
    try:
        resolved = file.resolve()
        if resolved.is_relative_to(root.resolve()) or not resolved.is_file():
            return None
        source = resolved.read_bytes()
    except OSError:
        return None
    digest = experiment.get("scenario_sha256")
    if not isinstance(digest, str) or digest != hashlib.sha256(source).hexdigest():
        return None  # without a recorded digest there is no telling that this is the file the runs used
    recorded = str(experiment.get("scenario_class") or "")
    module, _, name = recorded.rpartition(".")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    if module == f"agentsim_scenarios.{file.stem}":
        return resolved if name in classes else None
    if records_a_bare_game(experiment, root):  # a layer game: its class sets `name` to the recorded scenario name
        wanted = experiment.get("scenario")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (isinstance(item, ast.Assign) and any(isinstance(target, ast.Name) and target.id == "name"
                                                            for target in item.targets)
                            and isinstance(item.value, ast.Constant) and item.value.value == wanted):
                        return resolved
    return None


def interaction_graph(model: Any) -> list[list[int]] | None:
    """Who may meet whom, as each agent's neighbours, where the run's pairing draws partners
    on a graph (the naming game's `topology`, the network family's graphs); None where
    anyone may meet anyone."""
    neighbours = getattr(getattr(model.scheduler, "pairing", None), "neighbours", None)
    return [list(others) for others in neighbours] if isinstance(neighbours, list) else None


def _dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def _time(text: Any) -> float | None:
    """A stored UTC time as seconds since the epoch (None: none, or not a time)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _iso(moment: float | None) -> str | None:
    return None if moment is None else datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")


def _seconds(started: float | None, ended: float | None) -> float | None:
    """A run's wall time: to its end, or to its last record once its writer is gone, or so far."""
    if started is None:
        return None
    return max((ended if ended is not None else time.time()) - started, 0.0)


class Watcher:
    """Every experiment under a directory (a search keeps one per sub-directory), read on
    demand, at most every `min_interval_s`: several open pages cost one reading. The directory
    need not exist yet: the page waits for it."""

    def __init__(self, directory: Path, *, min_interval_s: float = 0.25) -> None:
        self.directory = directory
        self.min_interval_s = min_interval_s
        self.followed: dict[Path, Followed] = {}
        self.last: tuple[float, dict[str, Any]] | None = None
        self.lock = threading.Lock()

    def state(self) -> dict[str, Any]:
        with self.lock:
            if self.last is not None and time.monotonic() - self.last[0] < self.min_interval_s:
                return self.last[1]
            experiments = []
            exists = self.directory.is_dir()
            for path in sorted({path.parent for path in self.directory.rglob(DATABASE)}) if exists else ():
                followed = self.followed.get(path)
                if followed is None:
                    where = path.relative_to(self.directory).as_posix() if path != self.directory else "."
                    followed = self.followed[path] = Followed(path, where, self.directory)
                experiments.append(followed.read())
            state = {"directory": str(self.directory), "exists": exists,
                     "time": datetime.now(UTC).isoformat(timespec="seconds"), "experiments": experiments}
            self.last = (time.monotonic(), state)
            return state

    def calls(self, where: str, run: int, x: float) -> dict[str, Any]:
        with self.lock:
            followed = next((each for each in self.followed.values() if each.where == where), None)
            if followed is None:
                raise Damaged(f"no experiment at {where!r} under {self.directory}")
            return followed.calls(run, x)


def page() -> bytes:
    return resources.files("agentsim").joinpath(PAGE).read_bytes()


def asset(name: str) -> bytes:
    return resources.files("agentsim").joinpath(name).read_bytes()


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def allowed_host(host: str) -> bool:
    """Whether this server answers a request whose `Host` is `host`: a loopback name, on any
    port (SSH forwarding may bring the page to another local port); a page served under another
    name that resolves here (DNS rebinding) is refused."""
    text = host.lower()
    name, _, port = text.rpartition(":")
    if not name or not port.isdigit():  # no port ("localhost", "[::1]")
        name = text
    return name in LOOPBACK_NAMES


async def serve(directory: Path, *, port: int, host: str = "127.0.0.1", ready: Any = print) -> None:
    """Serve the page and its state until cancelled; `ready` is told the address once it listens."""
    from aiohttp import web

    watcher = Watcher(directory)

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if not allowed_host(request.host):
            return web.Response(status=421, text="this server answers requests for its own loopback address only\n",
                                headers=HEADERS)
        response: web.StreamResponse = await handler(request)
        response.headers.update(HEADERS)
        return response

    async def index(request: web.Request) -> web.Response:
        return web.Response(body=page(), content_type="text/html", charset="utf-8")

    async def static(request: web.Request) -> web.Response:
        name, kind = ASSETS[request.path]
        return web.Response(body=asset(name), content_type=kind, charset="utf-8")

    async def state(request: web.Request) -> web.Response:
        document = await asyncio.to_thread(watcher.state)
        return web.json_response(document, dumps=_dumps)

    async def calls(request: web.Request) -> web.Response:
        try:
            run, x = int(request.query["run"]), float(request.query["x"])
            document = await asyncio.to_thread(watcher.calls, request.query.get("where", "."), run, x)
        except (KeyError, ValueError) as error:
            return web.json_response({"error": f"ask calls.json?where=W&run=N&x=X ({one_line(error)})"}, status=400)
        except Exception as error:  # the store's problem, said in one line
            return web.json_response({"error": one_line(error)}, status=404 if isinstance(error, Damaged) else 500)
        return web.json_response(document, dumps=_dumps)

    app = web.Application(middlewares=[guard])
    app.add_routes([web.get("/", index), web.get("/state.json", state), web.get("/calls.json", calls),
                    *(web.get(path, static) for path in ASSETS)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    waiting = "" if directory.is_dir() else " (it does not exist yet: the page waits for it)"
    ready(f"watching {directory}{waiting}: open http://{host}:{port}/ (Ctrl-C to stop)")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def _dumps(value: Any) -> str:
    """JSON for the page: NaN and infinities (never valid JSON) as null, anything else as text."""
    return json.dumps(_finite(value), default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
