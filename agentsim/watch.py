"""`python -m agentsim watch DIR`: a web page that follows a results directory while its runs
record and after they end, for someone whose experiment runs for hours on another machine or
who works in a notebook, where the terminal's live view is not at hand.

The page (watch.html, no script from outside: the machine may have no network) asks
`state.json` every second; the server answers from the stores under DIR, read-only, as one
more SQLite reader beside the run's one writer. Each run's figures are the family's own
(their readout's `live_figures`, what the terminal view shows), computed from the run's last
checkpoint: the model is rebuilt from its recorded scenario and seed and restored, never
stepped. So every family is shown from what the store holds, and nothing is asked of a model.

Nothing under DIR is written, the database's SQLite side files included: each read opens the
database as every reader does (agentsim/sqlite_reading.py: `immutable=1` once no writer holds
it, the `-shm` mapped read-only beside a live or killed writer) and closes it at once, so that
the writer's close, which removes the side files when it is the last connection, is rarely shared.
"""

from __future__ import annotations

import asyncio
import json
import os
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

from .sqlite_reading import open_read_only
from .store import DATABASE

PAGE = "watch.html"
LOCK = ".agentsim.lock"  # session.LOCK: the writer's flock on the directory (not imported: the runner is heavy)
RUNS_PER_READING = 8  # runs whose figures one reading rebuilds, at most
MAX_GRAPH_NODES = 1500  # a larger graph is left out of the page: its drawing would not be read


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


@dataclass
class RunCache:
    """What a run's last reading computed, and what to compute again only when it changes."""

    key: tuple[Any, ...] = ()
    read_at: float = 0.0
    shown: dict[str, Any] = field(default_factory=dict)
    layout: dict[int, tuple[float, float]] | None = None
    edges: list[tuple[int, int]] = field(default_factory=list)
    choices: dict[int, str] = field(default_factory=dict)
    choices_from: int = 0


class Followed:
    """One experiment's store under the watched directory: its scenario (rebuilt once) and
    each run's figures (computed again when its checkpoint or status changes)."""

    def __init__(self, directory: Path, where: str) -> None:
        self.directory = directory
        self.where = where
        self.scenarios: dict[Any, Any] = {}
        self.runs: dict[int, RunCache] = {}
        self.unresolved: str | None = None

    def read(self) -> dict[str, Any]:
        with read_only(self.directory / DATABASE) as connection:
            tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"experiment", "runs", "checkpoints"} <= tables:
                return {"where": self.where, "waiting": True, "runs": []}
            experiment = {key: json.loads(value) for key, value in connection.execute("SELECT key, value FROM experiment")}
            rows = _dicts(connection.execute("SELECT run, replicate, seed, status, stop_reason, started, finished, summary "
                                             "FROM runs ORDER BY run"))
            marks = dict(connection.execute("SELECT run, t FROM checkpoints").fetchall())
            # The runs whose checkpoint or status changed, the longest unchanged first: a reading
            # rebuilds at most RUNS_PER_READING of them (ninety runs of a grid at once would
            # take the CPU the runs need), the others at the next readings.
            keys = {row["run"]: (marks.get(row["run"]), row["status"], row["stop_reason"]) for row in rows}
            for row in rows:
                self.runs.setdefault(row["run"], RunCache())
            stale = sorted((run for run, key in keys.items() if self.runs[run].key != key), key=lambda run: self.runs[run].read_at)
            changed = {}
            for run in stale[:RUNS_PER_READING]:
                blob = connection.execute("SELECT state FROM checkpoints WHERE run = ?", (run,)).fetchone()
                changed[run] = blob[0] if blob else None
                cache = self.runs[run]
                if cache.layout is not None and blob:
                    self._read_choices(connection, run, cache)
        recording = writer_active(self.directory)
        shown = []
        for row in rows:
            cache = self.runs[row["run"]]
            if row["run"] in changed:
                try:
                    cache.shown = self._figures(experiment, row, changed[row["run"]], cache)
                except Exception as error:  # one run's figures that cannot be rebuilt: the others still show
                    cache.shown = {"error": f"its figures could not be rebuilt ({type(error).__name__}: {error})"}
                cache.key, cache.read_at = keys[row["run"]], time.monotonic()
            shown.append(self._run(row, cache, recording))
        return {
            "where": self.where, "scenario": experiment.get("scenario"), "backend": experiment.get("backend"),
            "seed": experiment.get("seed"), "planned": int(experiment.get("runs") or len(rows)),
            "recording": recording, "unresolved": self.unresolved, "runs": shown,
        }

    def _read_choices(self, connection: sqlite3.Connection, run: int, cache: RunCache) -> None:
        """Each agent's latest move that a reply gave (a fallback is never a choice), read from
        where the last reading stopped."""
        rows = connection.execute("SELECT agent, action, MAX(t) FROM decisions WHERE run = ? AND t >= ? AND payoff IS NOT NULL "
                                  "AND fallback IS NOT 1 GROUP BY agent", (run, cache.choices_from)).fetchall()
        for agent, action, t in rows:
            if action is not None:
                cache.choices[int(agent)] = str(action)
            cache.choices_from = max(cache.choices_from, int(t))

    def _scenario(self, experiment: dict[str, Any], replicate: int) -> Any:
        from .analysis.recorded import RecordedExperiment, rebuild_scenario

        variants = experiment.get("variants") or []
        variant = replicate % len(variants) if variants else None
        if variant not in self.scenarios:
            changes = dict(variants[variant]) if variant is not None else {}
            scenario = rebuild_scenario(experiment, self.directory, changes)
            if scenario is None:
                recorded = RecordedExperiment(self.directory, where=self.where)
                recorded.__dict__["experiment"] = experiment  # (its cached property: read here, not from a writable Store)
                self.unresolved = recorded.unresolved
            self.scenarios[variant] = scenario
        return self.scenarios[variant]

    def _figures(self, experiment: dict[str, Any], row: dict[str, Any], blob: bytes | None, cache: RunCache) -> dict[str, Any]:
        """The run's figures at its last checkpoint: the family's readout's `live_figures`, its calls,
        and, for a run on a graph, the graph with each agent's latest choice."""
        if blob is None:
            return {}
        scenario = self._scenario(experiment, int(row["replicate"]))
        if scenario is None:
            return {}
        from .model import PopulationModel

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a page to look at: a family's notice is for the run's own output
            model = PopulationModel(scenario, seed=int(row["seed"]), replicate=int(row["replicate"]), run_id=int(row["run"]))
            model.restore(blob)
            figures = model.readout.live_figures(model)
        usage = model.usage.total()
        shown: dict[str, Any] = {
            "figures": asdict(figures) | {"shares": dict(figures.shares)},
            "rounds": model.rounds_done, "max_rounds": scenario.max_rounds(), "interactions": model.completed,
            "usage": usage.as_dict() | {"in_flight": 0},
        }
        neighbours = interaction_graph(model)
        if neighbours is not None and 0 < len(neighbours) <= MAX_GRAPH_NODES:
            if cache.layout is None:
                import networkx as nx

                graph = nx.Graph()
                graph.add_nodes_from(range(len(neighbours)))
                graph.add_edges_from((a, b) for a, others in enumerate(neighbours) for b in others if a < b)
                positions = nx.spring_layout(graph, seed=0)  # (Kamada-Kawai draws a lattice better, at 20 times the time)
                cache.layout = {int(node): (float(x), float(y)) for node, (x, y) in positions.items()}
                cache.edges = [(int(a), int(b)) for a, b in graph.edges()]
                with read_only(self.directory / DATABASE) as connection:
                    self._read_choices(connection, int(row["run"]), cache)
            shown["graph"] = True
        return shown

    def _run(self, row: dict[str, Any], cache: RunCache, recording: bool | None) -> dict[str, Any]:
        summary = json.loads(row["summary"]) if row["summary"] else {}
        status = row["status"]
        if status == "running" and recording is False:
            status = "stopped"  # recorded as running, but no agentsim holds the directory: killed, or stopped
        run = {"run": row["run"], "seed": row["seed"], "status": status, "stop_reason": row["stop_reason"],
               "cell": ", ".join(f"{key}={value}" for key, value in (summary.get("variant_params") or {}).items())}
        shown = dict(cache.shown)
        if set(shown) <= {"error"} and summary:  # the figures cannot be rebuilt: what the summary says
            shown |= {"rounds": summary.get("rounds"), "interactions": summary.get("interactions"),
                     "usage": {key: summary.get(key) for key in ("calls", "fallbacks", "invalid_replies", "reasks",
                                                                 "cost_usd", "cache_hits", "retries")}}
        if shown.pop("graph", False) and cache.layout is not None:
            shown["graph"] = {"nodes": [[node, x, y, cache.choices.get(node)] for node, (x, y) in sorted(cache.layout.items())],
                              "edges": cache.edges}
        elapsed = _seconds(row["started"], row["finished"])
        calls = (shown.get("usage") or {}).get("calls")
        if elapsed and elapsed >= 3 and calls is not None:  # (the store's times are whole seconds)
            shown["calls_per_second"] = calls / elapsed
        shown["elapsed_s"] = elapsed
        return run | shown


def interaction_graph(model: Any) -> list[list[int]] | None:
    """Who may meet whom, as each agent's neighbours, where the run's pairing draws partners
    on a graph (the naming game's `topology`, the network family's graphs); None where
    anyone may meet anyone."""
    neighbours = getattr(getattr(model.scheduler, "pairing", None), "neighbours", None)
    return [list(others) for others in neighbours] if isinstance(neighbours, list) else None


def _dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def _seconds(started: str | None, finished: str | None) -> float | None:
    """A run's wall time so far (or in all, once finished), from the store's UTC times."""
    if not started:
        return None
    try:
        begun = datetime.fromisoformat(started)
        end = datetime.fromisoformat(finished) if finished else datetime.now(UTC)
    except ValueError:
        return None
    return max((end - begun).total_seconds(), 0.0)


class Watcher:
    """Every experiment under a directory (a search keeps one per sub-directory), read on
    demand, at most every `min_interval_s`: several open pages cost one reading."""

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
            for path in sorted({path.parent for path in self.directory.rglob(DATABASE)}):
                followed = self.followed.get(path)
                if followed is None:
                    where = path.relative_to(self.directory).as_posix() if path != self.directory else "."
                    followed = self.followed[path] = Followed(path, where)
                try:
                    experiments.append(followed.read())
                except sqlite3.DatabaseError as error:  # a page being written as it was read: the next reading
                    experiments.append({"where": followed.where, "error": str(error), "runs": []})
            state = {"directory": str(self.directory), "time": datetime.now(UTC).isoformat(timespec="seconds"),
                     "experiments": experiments}
            self.last = (time.monotonic(), state)
            return state


def page() -> bytes:
    return resources.files("agentsim").joinpath(PAGE).read_bytes()


async def serve(directory: Path, *, port: int, host: str = "127.0.0.1", ready: Any = print) -> None:
    """Serve the page and its state until cancelled; `ready` is told the address once it listens."""
    from aiohttp import web

    watcher = Watcher(directory)

    async def index(request: web.Request) -> web.Response:
        return web.Response(body=page(), content_type="text/html", charset="utf-8")

    async def state(request: web.Request) -> web.Response:
        document = await asyncio.to_thread(watcher.state)
        return web.json_response(document, dumps=lambda value: json.dumps(value, default=str),
                                 headers={"Cache-Control": "no-store"})

    app = web.Application()
    app.add_routes([web.get("/", index), web.get("/state.json", state)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    ready(f"watching {directory}: open http://{host}:{bound}/ (Ctrl-C to stop)")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
