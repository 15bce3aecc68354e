"""The experiment database: one SQLite file per output directory, written as the run goes.

Tables (every row of a run carries its `run` number):

    experiment   key/value: scenario, parameters, seed, backend, code version, templates
    runs         one row per replicate: seed, status, stop reason, summary
    agents       each agent's kind (llm, committed, rule) and model
    encounters   run, t, round, outcome
    decisions    one row per policy call (attempt), and one bare row for a decision taken
                 without a call (a committed agent); the decision's last row carries the move:
                 `action` played and `payoff` (NULL on earlier attempts). Per call: `parsed`
                 (what the reply was read as), `context`, `reply`, tokens, latency, `error`
                 (a backend error kind, or why the reply was unusable), `probabilities`
                 (JSON: each option's exact probability under the sampler, where the backend
                 scores them, llm/scoring.py); on the
                 decision's last row, `fallback` is 1 when no reply gave the action (the game's
                 fallback, or what it salvaged from an unusable reply): analyses count model
                 answers only and report the fallback rate; `sampled_locally` is 1 where the
                 reply was drawn from a stored choice distribution instead of a call
                 (`--sample-locally`, llm/choices.py)
    rounds       per population round tallies (JSON)
    checkpoints  the state a run resumes from

and three views: `moves` (run, t, agent, action, payoff), `calls` (every policy call) and
`decisions_by_model` (decisions with each agent's model and kind, to split a mixed-model
population's interactions by model).

A call stores the game's compact `context` instead of the prompt text; the scenario rebuilds
the exact messages from it (`Store.messages`), which keeps a naming-game interaction under 200
bytes with every prompt recoverable. Rows reach the file only together with the checkpoint of
the state they lead to, in one transaction: a run killed at any moment resumes from its last
checkpoint without losing or duplicating a row.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checkpoints import CheckpointError, loads
from .errors import DamagedStoreError, OutputDirError
from .records import CallRecord, EncounterRecord

if TYPE_CHECKING:
    from .llm.base import Message
    from .scenario import Scenario

DATABASE = "agentsim.db"
# SQLite's application_id of an agentsim database ("AGSM"): agentsim never writes into a file
# that is not its own. Databases written before it was set carry 0 and agentsim's tables.
APPLICATION_ID = 0x4147534D
# The store's version, in `experiment`: 2 added decisions.fallback (and the application_id); 3
# draws option orders with `random.Random.sample` on the run's generator (before, one draw was
# decoded as a Lehmer code), so a run written before 3 is read and analysed as ever but cannot be
# continued: its remaining encounters would be drawn by another process; 4 added
# decisions.sampled_locally (draws are unchanged); 5 records the stand-in's settings as
# `standin` in `experiment` (before, they were the scenario's parameters named standin_KEY;
# opening an earlier file moves them there; draws and answers are unchanged); 6: `probabilities`
# holds only exact option distributions (llm/scoring.py); what earlier versions stored there was
# read from the first token's alternatives, not the model's chance of each reply, so opening an
# earlier file moves it to a table of its own, `first_token_probabilities`, read by no analysis.
STORE_VERSION = 6
SAME_DRAWS_SINCE = 3

_MOVES_VIEW = """CREATE VIEW IF NOT EXISTS moves AS
    SELECT run, t, agent, action, payoff, fallback IS 1 AS fallback FROM decisions WHERE payoff IS NOT NULL"""

# One transaction: a disk that fills while the tables are made leaves all of them or none.
_SCHEMA = """
BEGIN;
CREATE TABLE IF NOT EXISTS experiment (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    run INTEGER PRIMARY KEY, replicate INTEGER NOT NULL, seed INTEGER NOT NULL, backend TEXT NOT NULL,
    status TEXT NOT NULL, stop_reason TEXT, started TEXT, finished TEXT, summary TEXT);
CREATE TABLE IF NOT EXISTS agents (
    run INTEGER, agent INTEGER, kind TEXT, model TEXT, PRIMARY KEY (run, agent)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS encounters (
    run INTEGER, t INTEGER, round INTEGER, outcome INTEGER, PRIMARY KEY (run, t)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS decisions (
    run INTEGER, t INTEGER, agent INTEGER, attempt INTEGER, action TEXT, payoff REAL, parsed TEXT,
    context TEXT, reply TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, latency_us INTEGER, error TEXT,
    probabilities TEXT, fallback INTEGER, sampled_locally INTEGER, PRIMARY KEY (run, t, agent, attempt)) WITHOUT ROWID;
{moves}
CREATE VIEW IF NOT EXISTS calls AS
    SELECT run, t, agent, attempt, parsed AS action, context, reply, prompt_tokens, completion_tokens, latency_us, error
    FROM decisions WHERE reply IS NOT NULL;
CREATE VIEW IF NOT EXISTS decisions_by_model AS
    SELECT decisions.*, agents.model AS model, agents.kind AS kind FROM decisions JOIN agents USING (run, agent);
CREATE TABLE IF NOT EXISTS rounds (run INTEGER, round INTEGER, stats TEXT, PRIMARY KEY (run, round)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (run INTEGER PRIMARY KEY, t INTEGER, state BLOB);
COMMIT;
""".replace("{moves}", _MOVES_VIEW + ";")


@dataclass
class Recorder:
    """Buffers one run's rows until the next checkpoint commits them.

    Decision rows come in three shapes, each with its own INSERT: most are a final answer
    with no error and no probabilities (`answered`), a committed agent's is a bare move
    (`bare`), and the rest carry every column (`decisions`). The shorter shapes leave their
    NULL columns out, because binding a None costs the sqlite3 module an adapter lookup that
    fails with an exception: two of them per row were a tenth of writing the row."""

    run: int
    encounters: list[tuple[Any, ...]] = field(default_factory=list)
    decisions: list[tuple[Any, ...]] = field(default_factory=list)
    answered: list[tuple[Any, ...]] = field(default_factory=list)
    bare: list[tuple[Any, ...]] = field(default_factory=list)
    rounds: list[tuple[Any, ...]] = field(default_factory=list)

    def add(self, record: EncounterRecord) -> None:
        run, t = self.run, record.t
        self.encounters.append((run, t, record.round, record.outcome))
        calls = record.calls
        # An agent a game asks again in the same encounter (a layer game's later move) has its
        # decisions one after another, each starting with a first attempt (0): each move takes
        # the next, and its rows continue the agent's count of attempts in the encounter.
        recorded: dict[int, int] = {}  # the rows each agent has so far in this encounter
        for move in record.moves:
            agent = move.agent
            own = [call for call in calls if call.agent == agent] if calls else calls
            offset = recorded.get(agent, 0)
            if offset or any(call.attempt == 0 for call in own[1:]):
                own = _next_decision(own, offset)
            recorded[agent] = offset + max(len(own), 1)
            if not own:
                self.bare.append((run, t, agent, offset, move.action, move.payoff))
                continue
            last = own[-1]
            for call in own:
                attempt = offset + call.attempt
                if call is last and call.error is None and not call.probabilities:
                    self.answered.append((run, t, agent, attempt, move.action, move.payoff, call.action, call.context,
                                          call.reply, call.prompt_tokens, call.completion_tokens, call.latency_us))
                    continue
                final = call is last
                self.decisions.append((run, t, agent, attempt, move.action if final else None,
                                       move.payoff if final else None, call.action, call.context, call.reply,
                                       call.prompt_tokens, call.completion_tokens, call.latency_us, call.error,
                                       json.dumps(dict(call.probabilities)) if call.probabilities else None,
                                       1 if final and call.fallback else None, 1 if call.sampled_locally else None))

    def add_round(self, round_: int, stats: dict[str, Any]) -> None:
        self.rounds.append((self.run, round_, json.dumps(stats, separators=(",", ":"))))

    def clear(self) -> None:
        for rows in (self.encounters, self.decisions, self.answered, self.bare, self.rounds):
            rows.clear()


def _next_decision(own: list[CallRecord], offset: int) -> list[CallRecord]:
    """The calls of an agent's decision that starts at its `offset`-th call of the encounter
    (its first attempt, 0, up to the next decision's first attempt)."""
    rest = own[offset:]
    end = next((index for index, call in enumerate(rest) if index and call.attempt == 0), len(rest))
    return rest[:end]


class Store:
    def __init__(self, directory: Path | str, *, check_checkpoints: bool = False) -> None:
        """Open (or create) the database of `directory`. An existing file is checked before
        anything is written to it: refused if damaged or not agentsim's, and with
        `check_checkpoints` (a resume) if a checkpoint does not read back."""
        self.directory = Path(directory)
        self.path = self.directory / DATABASE
        existing = self.path.is_file() and self.path.stat().st_size > 0
        self.directory.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, isolation_level=None)
        try:
            if existing:
                existing = self._check_own()
                self._check_json()
                if check_checkpoints:
                    self.verify_checkpoints()
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            self.connection.execute("PRAGMA cache_size=-65536")  # 64 MiB: b-tree inserts stay in memory
            if self.connection.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                self.connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self.connection.executescript(_SCHEMA)
            # The version the file was written with, before `_upgrade` brings it to this one's layout.
            self.written_version = self._recorded_version() if existing else STORE_VERSION
            self._upgrade()
        except BaseException:
            self.connection.close()
            raise

    def _check_own(self) -> bool:
        """Refuse, before writing anything, a file that is damaged or not agentsim's; say whether
        it holds any table (one with none is new: a disk that filled as agentsim made them)."""
        where = self.path
        try:
            application = self.connection.execute("PRAGMA application_id").fetchone()[0]
            tables = {row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            verdict = self.connection.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as error:
            raise DamagedStoreError(f"{where} is damaged or not a database ({error}); nothing was changed: restore it "
                                    f"from a copy, or record into a new --out DIR") from None
        if application != APPLICATION_ID and tables and not (application == 0 and {"experiment", "runs"} <= tables):
            raise OutputDirError(f"{where} is an SQLite database agentsim did not create; agentsim never writes into "
                                 f"it: choose another --out DIR")
        if verdict != "ok":
            raise DamagedStoreError(f"{where} is damaged ({verdict}); nothing was changed: restore it from a copy, "
                                    f"or record into a new --out DIR")
        return bool(tables)

    def _recorded_version(self) -> int:
        row = self.connection.execute("SELECT value FROM experiment WHERE key = 'store_version'").fetchone()
        return int(row[0]) if row else 1

    def _upgrade(self) -> None:
        """Bring a database written by an earlier agentsim to this layout."""
        columns = {row[1] for row in self.connection.execute("PRAGMA table_info(decisions)")}
        version = self.connection.execute("SELECT value FROM experiment WHERE key = 'store_version'").fetchone()
        if version == (str(STORE_VERSION),) and {"probabilities", "fallback", "sampled_locally"} <= columns:
            return
        with self._transaction():
            if "probabilities" not in columns:  # a database written before option probabilities were kept
                self.connection.execute("ALTER TABLE decisions ADD COLUMN probabilities TEXT")
            if "fallback" not in columns:
                # Before the column, a decision's last row carried an error exactly when it fell back.
                self.connection.execute("ALTER TABLE decisions ADD COLUMN fallback INTEGER")
                self.connection.execute("UPDATE decisions SET fallback = 1 WHERE payoff IS NOT NULL AND error IS NOT NULL")
                self.connection.execute("DROP VIEW IF EXISTS moves")
                self.connection.execute(_MOVES_VIEW)
            if "sampled_locally" not in columns:  # written before --sample-locally
                self.connection.execute("ALTER TABLE decisions ADD COLUMN sampled_locally INTEGER")
            approximate = "SELECT run, t, agent, attempt, probabilities FROM decisions WHERE probabilities IS NOT NULL"
            if self.written_version < 6 and self.connection.execute(approximate + " LIMIT 1").fetchone():
                # not the model's chances of its replies: kept apart, read by no analysis
                self.connection.execute(f"CREATE TABLE IF NOT EXISTS first_token_probabilities AS {approximate}")
                self.connection.execute("UPDATE decisions SET probabilities = NULL WHERE probabilities IS NOT NULL")
            self._move_standin_settings()
            self.connection.execute("INSERT OR REPLACE INTO experiment VALUES ('store_version', ?)", (str(STORE_VERSION),))

    def _move_standin_settings(self) -> None:
        """Before version 5 the stand-in's settings were parameters named standin_KEY; they
        are the experiment's `standin` {KEY: value} now, which a resume compares and the
        analyses read."""
        experiment = self.experiment()
        params = experiment.get("params")
        if not isinstance(params, dict) or "standin" in experiment:
            return
        settings = {key.removeprefix("standin_"): params.pop(key) for key in sorted(params) if key.startswith("standin_")}
        self.connection.executemany("INSERT OR REPLACE INTO experiment VALUES (?, ?)",
                                    [(key, json.dumps(value, sort_keys=True))
                                     for key, value in (("params", params), ("standin", settings))])

    def verify_checkpoints(self) -> None:
        """Every checkpoint reads back as this agentsim's plain data, before a resume changes
        anything. One of another format (an older agentsim's pickle: never unpickled) or of
        classes that changed since is refused with what to do; a damaged one as damaged."""
        if not self.connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoints'").fetchone():
            return  # a file whose tables were never made records nothing to check
        for run, blob in self.connection.execute("SELECT run, state FROM checkpoints"):
            try:
                loads(blob)
            except CheckpointError as error:
                if not error.incompatible:
                    raise DamagedStoreError(f"{self.path}: the checkpoint of run {run} is damaged ({error}); nothing "
                                            f"was changed: restore the database from a copy, or record into a new "
                                            f"--out DIR") from None
                written = self._recorded_text("code_version") or "an older agentsim"
                raise OutputDirError(f"{self.path}: the checkpoint of run {run} cannot be continued by this agentsim "
                                     f"({error}; written by {written}); finish the runs with the agentsim that started "
                                     f"them, or start afresh with --out NEW_DIR") from None

    def _check_json(self) -> None:
        """The experiment's values and the runs' summaries read back (a resume and the analyses
        read them), before anything changes."""
        tables = {row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        checks = [("experiment", "SELECT key, value FROM experiment"), ("runs", "SELECT run, summary FROM runs")]
        for table, sql in checks:
            if table not in tables:
                continue
            for key, value in self.connection.execute(sql):
                if value is None and table == "runs":
                    continue
                what = f"the experiment's '{key}'" if table == "experiment" else f"the summary of run {key}"
                try:
                    read = json.loads(value)
                except (TypeError, ValueError, RecursionError):
                    raise DamagedStoreError(f"{self.path}: {what} is damaged (not JSON); nothing was changed: restore "
                                            f"the database from a copy, or record into a new --out DIR") from None
                expected = _SUMMARY_TYPE if table == "runs" else _EXPERIMENT_TYPES.get(key)
                if expected is not None and not (isinstance(read, expected[0]) and not isinstance(read, bool)
                                                 and expected[1](read)):
                    raise DamagedStoreError(f"{self.path}: {what} is damaged (not {expected[2]}); nothing was changed: "
                                            f"restore the database from a copy, or record into a new --out DIR")

    def _recorded_text(self, key: str) -> str | None:
        try:
            row = self.connection.execute("SELECT value FROM experiment WHERE key = ?", (key,)).fetchone()
            return str(json.loads(row[0])) if row else None
        except (sqlite3.Error, ValueError):
            return None

    @classmethod
    def exists(cls, directory: Path | str) -> bool:
        return (Path(directory) / DATABASE).is_file()

    def close(self) -> None:
        self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.connection.close()

    # --- the experiment ------------------------------------------------------------------
    def experiment(self) -> dict[str, Any]:
        return {key: json.loads(value) for key, value in self.connection.execute("SELECT key, value FROM experiment")}

    def set_experiment(self, values: dict[str, Any]) -> None:
        with self._transaction():
            self.connection.executemany(
                "INSERT OR REPLACE INTO experiment VALUES (?, ?)",
                [(key, json.dumps(value, sort_keys=True)) for key, value in values.items()],
            )

    # --- runs ------------------------------------------------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        cursor = self.connection.execute("SELECT * FROM runs ORDER BY run")
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, row)) for row in cursor]
        for row in rows:
            row["summary"] = json.loads(row["summary"]) if row["summary"] else {}
        return rows

    def begin_run(self, run: int, *, replicate: int, seed: int, backend: str,
                  agents: list[tuple[int, str, str]]) -> None:
        with self._transaction():
            self.connection.execute(
                "INSERT INTO runs (run, replicate, seed, backend, status, started) VALUES (?, ?, ?, ?, 'running', ?)",
                (run, replicate, seed, backend, _now()),
            )
            self.connection.executemany("INSERT INTO agents VALUES (?, ?, ?, ?)",
                                        [(run, index, kind, model) for index, kind, model in agents])

    def set_status(self, run: int, status: str, *, stop_reason: str | None = None,
                   summary: dict[str, Any] | None = None) -> None:
        finished = _now() if status in ("done", "failed") else None
        with self._transaction():
            self.connection.execute(
                "UPDATE runs SET status = ?, stop_reason = ?, finished = ?, summary = ? WHERE run = ?",
                (status, stop_reason, finished, json.dumps(summary, sort_keys=True) if summary is not None else None, run),
            )

    def commit(self, recorder: Recorder, checkpoint: bytes, t: int) -> None:
        """Write a run's buffered rows together with the checkpoint they lead to."""
        with self._transaction():
            connection = self.connection
            connection.executemany("INSERT INTO encounters VALUES (?, ?, ?, ?)", recorder.encounters)
            connection.executemany("INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", recorder.decisions)
            connection.executemany(
                "INSERT INTO decisions (run, t, agent, attempt, action, payoff, parsed, context, reply, prompt_tokens,"
                " completion_tokens, latency_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", recorder.answered)
            connection.executemany("INSERT INTO decisions (run, t, agent, attempt, action, payoff) VALUES (?, ?, ?, ?, ?, ?)",
                                   recorder.bare)
            connection.executemany("INSERT INTO rounds VALUES (?, ?, ?)", recorder.rounds)
            connection.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?)", (recorder.run, t, checkpoint))
        recorder.clear()

    def checkpoint(self, run: int) -> bytes | None:
        row = self.connection.execute("SELECT state FROM checkpoints WHERE run = ?", (run,)).fetchone()
        return row[0] if row else None

    def discard_run(self, run: int) -> None:
        """Forget a run that never reached its first checkpoint, so it can start afresh."""
        with self._transaction():
            for table in ("runs", "agents", "encounters", "decisions", "rounds", "checkpoints"):
                self.connection.execute(f"DELETE FROM {table} WHERE run = ?", (run,))

    # --- reading back ------------------------------------------------------------------------
    def rows(self, sql: str, parameters: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        return self.connection.execute(sql, parameters)

    def messages(self, scenario: Scenario[Any, Any, Any], run: int, t: int, agent: int, attempt: int = 0) -> tuple[Message, ...]:
        """The exact messages of a recorded call, rebuilt from its context and earlier replies."""
        rows = list(self.rows(
            "SELECT attempt, context, reply FROM calls WHERE run = ? AND t = ? AND agent = ? AND attempt <= ? ORDER BY attempt",
            (run, t, agent, attempt),
        ))
        if not rows or rows[-1][0] != attempt:
            raise KeyError(f"no call recorded for run {run}, t {t}, agent {agent}, attempt {attempt}")
        codec = scenario.codec
        if codec is None:
            raise KeyError(f"scenario '{scenario.name}' prompts no model: it has no codec to rebuild a call with")
        # The call's decision starts at its row with a context (an agent asked again in the
        # same encounter has a decision after another): rebuilt from there.
        start = max((index for index, (_, context, _) in enumerate(rows) if context), default=0)
        rows = rows[start:]
        return codec.rebuild_messages(rows[0][1], tuple(reply for _, _, reply in rows[:-1]))

    def by_model(self) -> dict[int, dict[str, dict[str, Any]]]:
        """Each run's decisions split by the model (`agents.model`: a backend label, or a rule
        such as `committed:Q`) of the agent that took them: the model's agents and kind, its
        decisions (moves played), fallbacks among them, and, over the model's own answers only
        (fallbacks left out), how often it chose each action (`choices`) and its mean payoff.
        What `summary.json`'s `by_model` and the results' per-model table are made of."""
        result: dict[int, dict[str, dict[str, Any]]] = {}
        for run, model, kind, agents in self.rows(
                "SELECT run, model, kind, COUNT(*) FROM agents GROUP BY run, model, kind ORDER BY run, model"):
            result.setdefault(run, {})[model] = {"kind": kind, "agents": agents, "decisions": 0, "fallbacks": 0,
                                                 "answers": 0, "mean_payoff": None, "choices": {}}
        for run, model, action, fallback, count in self.rows(
                "SELECT d.run, a.model, d.action, d.fallback IS 1, COUNT(*) FROM decisions d "
                "JOIN agents a ON a.run = d.run AND a.agent = d.agent WHERE d.payoff IS NOT NULL "
                "GROUP BY d.run, a.model, d.action, d.fallback IS 1 ORDER BY d.run, a.model, d.action"):
            entry = result.setdefault(run, {}).setdefault(model, {"kind": None, "agents": 0, "decisions": 0, "fallbacks": 0,
                                                                  "answers": 0, "mean_payoff": None, "choices": {}})
            entry["decisions"] += count
            if fallback:
                entry["fallbacks"] += count
                continue
            entry["answers"] += count
            if action is not None:
                entry["choices"][action] = entry["choices"].get(action, 0) + count
        # The mean payoff is per agent-encounter in which the agent chose (none of its decisions
        # there a fallback): one decision per encounter in most games; a layer game that asks a
        # player again in a round records the round's payoff on its last move (docs/games-layer.md).
        for run, model, total, count in self.rows(
                "SELECT p.run, a.model, SUM(p.payoff), COUNT(*) FROM (SELECT run, t, agent, SUM(payoff) AS payoff "
                "FROM decisions WHERE payoff IS NOT NULL GROUP BY run, t, agent HAVING MAX(fallback IS 1) = 0) p "
                "JOIN agents a ON a.run = p.run AND a.agent = p.agent GROUP BY p.run, a.model"):
            if run in result and model in result[run]:
                result[run][model]["mean_payoff"] = round((total or 0.0) / count, 6)
                result[run][model]["payoff_count"] = count  # what the mean is over (runs' means are weighted by it)
        return result

    def bytes_on_disk(self) -> int:
        self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(path.stat().st_size for path in self.directory.glob(DATABASE + "*"))

    def _transaction(self) -> _Transaction:
        return _Transaction(self.connection)


# What the experiment's values and the runs' summaries must be for a resume and the analyses
# to read them: (type, a check of the value, what to call it), by key.
_RUN_LIMIT = 10**9
_EXPERIMENT_TYPES: dict[str, tuple[type | tuple[type, ...], Any, str]] = {
    "runs": (int, lambda value: 0 <= value <= _RUN_LIMIT, "a count of runs"),
    "seed": (int, lambda value: 0 <= value < 2**63, "a seed from 0 to 2^63 - 1"),
    "params": (dict, lambda value: True, "a mapping of parameters"),
    "standin": (dict, lambda value: True, "a mapping of the stand-in's settings"),
    "prompt_templates": (dict, lambda value: all(isinstance(text, str) for text in value.values()),
                         "a mapping of template names to texts"),
    "population": (list, lambda value: all(isinstance(share, list) and len(share) == 2 and isinstance(share[0], str)
                                           and (share[1] is None or type(share[1]) is int) for share in value),
                   "a list of [backend, count]"),
    "variants": (list, lambda value: all(isinstance(variant, dict) for variant in value), "a list of parameter changes"),
    "scenario": (str, lambda value: True, "a scenario's name"),
    "scenario_class": (str, lambda value: True, "a class's dotted name"),
    "scenario_file": (str, lambda value: True, "a file's path"),
    "backend": (str, lambda value: True, "a backend's name"),
}
_SUMMARY_TYPE: tuple[type, Any, str] = (dict, lambda value: True, "a mapping of the run's figures")


class _Transaction:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def __enter__(self) -> None:
        self.connection.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        self.connection.execute("COMMIT" if kind is None else "ROLLBACK")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
