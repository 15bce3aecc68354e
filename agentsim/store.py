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

A run and `--resume` open the file to write it (`Store(DIR)`), every reader to read it
(`Store.read_only(DIR)`: nothing under DIR is written, SQLite's side files included,
agentsim/sqlite_reading.py); both check it whole first and refuse, in one line, a store that is
damaged, not agentsim's, or not laid out as its version says (agentsim/store_layout.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checkpoints import CheckpointError, loads
from .errors import DamagedStoreError, OutputDirError, UserError
from .records import CallRecord, EncounterRecord
from .sqlite_reading import open_read_only
from .store_layout import APPLICATION_ID, MOVES_VIEW, VIEWS, check_store

if TYPE_CHECKING:
    from .llm.base import Message
    from .scenario import Scenario

DATABASE = "agentsim.db"
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
{views}
CREATE TABLE IF NOT EXISTS rounds (run INTEGER, round INTEGER, stats TEXT, PRIMARY KEY (run, round)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (run INTEGER PRIMARY KEY, t INTEGER, state BLOB);
COMMIT;
""".replace("{views}", "".join(view + ";\n" for view in VIEWS))

# What a run records (`--record`, the experiment's `record`): every encounter and decision
# (`moves`, the default); the per-round tallies and the encounters of a sample of agents
# (`rounds`); or only each run's summary (`summary`). Checkpoints are the same at every level.
MOVES, ROUNDS, SUMMARY = "moves", "rounds", "summary"
RECORD_LEVELS = (MOVES, ROUNDS, SUMMARY)
# `rounds` records every encounter in which an agent of the sample takes part, whole (both
# players' moves and calls): the agents whose index is a multiple of ceil(N / SAMPLED_AGENTS),
# about this many (every agent of a population this small or smaller).
SAMPLED_AGENTS = 100
# Encounters a run buffers (with their decisions: about three rows each, a megabyte or two)
# before they are staged in the database's temporary tables (`Store.stage`): a run of a million
# agents holds a bounded buffer, whatever its checkpoints cost.
STAGE_ROWS = 5_000


def recorded_level(experiment: dict[str, Any]) -> str:
    """The recording level an experiment's runs used (its `record`; moves before levels existed)."""
    level = experiment.get("record")
    return level if level in RECORD_LEVELS else MOVES


def sampled_agents(population: int) -> range:
    """The agents `--record rounds` follows in a population of `population` (see SAMPLED_AGENTS)."""
    return range(0, population, max(1, -(-population // SAMPLED_AGENTS)))


@dataclass
class Recorder:
    """Buffers one run's rows until the next checkpoint commits them.

    Decision rows come in three shapes, each with its own INSERT: most are a final answer
    with no error and no probabilities (`answered`), a committed agent's is a bare move
    (`bare`), and the rest carry every column (`decisions`). The shorter shapes leave their
    NULL columns out, because binding a None costs the sqlite3 module an adapter lookup that
    fails with an exception: two of them per row were a tenth of writing the row.

    `level` is what it records (RECORD_LEVELS): at `rounds`, only the encounters of agents in
    `sample` (`sampled_agents`), at `summary` no encounter and no round."""

    run: int
    encounters: list[tuple[Any, ...]] = field(default_factory=list)
    decisions: list[tuple[Any, ...]] = field(default_factory=list)
    answered: list[tuple[Any, ...]] = field(default_factory=list)
    bare: list[tuple[Any, ...]] = field(default_factory=list)
    rounds: list[tuple[Any, ...]] = field(default_factory=list)
    level: str = MOVES
    sample: range | None = None
    # Where rows go once STAGE_ROWS encounters are buffered (the sink's `stage`), if anywhere.
    spill: Callable[[Recorder], None] | None = field(default=None, repr=False, compare=False)
    spill_at: int = field(default=STAGE_ROWS, repr=False, compare=False)

    def add(self, record: EncounterRecord) -> None:
        if self.level != MOVES:
            sample = self.sample
            if self.level == SUMMARY or sample is None or not any(move.agent in sample for move in record.moves):
                return
        run, t = self.run, record.t
        self.encounters.append((run, t, record.round, record.outcome))
        calls, moves = record.calls, record.moves
        count = len(moves)
        if len(calls) == count and (count == 1 or (count == 2 and moves[0].agent != moves[1].agent)
                                    or len({move.agent for move in moves}) == count):
            # the usual: one call per move, of agents asked once, in order, answered at once
            answered = self.answered
            for call, move in zip(calls, moves):
                if call.agent != move.agent or call.attempt or call.error is not None or call.probabilities:
                    break
            else:
                for call, move in zip(calls, moves):
                    answered.append((run, t, move.agent, 0, move.action, move.payoff, call.action, call.context,
                                     call.reply, call.prompt_tokens, call.completion_tokens, call.latency_us))
                self._spill_if_full()
                return
        # An agent a game asks again in the same encounter (a layer game's later move) has its
        # decisions one after another, each starting with a first attempt (0): each move takes
        # the next, and its rows continue the agent's count of attempts in the encounter.
        recorded: dict[int, int] = {}  # the rows each agent has so far in this encounter
        for move in moves:
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
        self._spill_if_full()

    def _spill_if_full(self) -> None:
        if len(self.encounters) >= self.spill_at and self.spill is not None:
            self.spill_at = len(self.encounters) + STAGE_ROWS  # (a sink that keeps them: again that many later)
            self.spill(self)

    def add_round(self, round_: int, stats: dict[str, Any]) -> None:
        if self.level != SUMMARY:
            self.rounds.append((self.run, round_, json.dumps(stats, separators=(",", ":"))))

    def __len__(self) -> int:
        """Rows buffered."""
        return len(self.encounters) + len(self.decisions) + len(self.answered) + len(self.bare) + len(self.rounds)

    def clear(self) -> None:
        for rows in (self.encounters, self.decisions, self.answered, self.bare, self.rounds):
            rows.clear()
        self.spill_at = STAGE_ROWS


def _next_decision(own: list[CallRecord], offset: int) -> list[CallRecord]:
    """The calls of an agent's decision that starts at its `offset`-th call of the encounter
    (its first attempt, 0, up to the next decision's first attempt)."""
    rest = own[offset:]
    end = next((index for index, call in enumerate(rest) if index and call.attempt == 0), len(rest))
    return rest[:end]


class StagedRows:
    """Runs' rows set aside before their checkpoint, in temporary tables beside the database (a
    file of SQLite's own, not the database, and in memory no more than its page cache), until
    the commit that writes the checkpoint copies them in (`Store.commit`)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.runs: set[int] = set()  # runs with rows set aside

    def add(self, recorder: Recorder) -> None:
        if not self.runs:
            self.connection.execute("PRAGMA temp.cache_size=-8192")  # 8 MiB; the rest spills to the temporary file
            for table in ("encounters", "decisions", "rounds"):
                self.connection.execute(f"CREATE TEMP TABLE IF NOT EXISTS staged_{table} AS SELECT * FROM main.{table} "
                                        f"WHERE 0")
        self.runs.add(recorder.run)
        _insert(self.connection, recorder, "temp")

    def copy(self, run: int) -> None:
        """Run `run`'s rows set aside, into the database, in the order they came (in the caller's transaction)."""
        if run in self.runs:
            for table in ("encounters", "decisions", "rounds"):
                self.connection.execute(f"INSERT INTO main.{table} SELECT * FROM temp.staged_{table} WHERE run = ? "
                                        f"ORDER BY rowid", (run,))

    def drop(self, run: int) -> None:
        """Forget run `run`'s rows set aside (copied now, or dropped with the run's buffer: a run
        stopped for its fallbacks records nothing since its last checkpoint)."""
        if run in self.runs:
            for table in ("encounters", "decisions", "rounds"):
                self.connection.execute(f"DELETE FROM temp.staged_{table} WHERE run = ?", (run,))
            self.runs.discard(run)


class Store:
    """An output directory's database: opened to write by a run and `--resume` only
    (`Store(DIR)`), by every reader to read (`Store.read_only(DIR)`)."""

    directory: Path
    path: Path
    connection: sqlite3.Connection
    writable: bool  # opened by a run or a resume; False: by a reader, which writes nothing
    written_version: int  # the store version the file was written with
    has_tables: bool
    fix: str  # what a refusal tells the user to do

    def __init__(self, directory: Path | str, *, checked: bool = False) -> None:
        """Open (or create) the database of `directory` to write it: a run's and `--resume`'s
        only (every reader opens it with `Store.read_only`). An existing file is checked whole
        through a read-only connection before anything is written to it: refused if damaged,
        not agentsim's, or missing a table or column its version has, or holding a value of the
        wrong type; `checked`: the caller has just checked it so (`read_only(resume=True)`),
        under the directory's lock."""
        self.directory = Path(directory)
        self.path = self.directory / DATABASE
        self.writable = True
        self.fix = "restore it from a copy, or record into a new --out DIR"
        existing = self.path.is_file() and self.path.stat().st_size > 0
        if existing and not checked:
            with _opened_to_read(self.directory, reader=False) as looked:
                existing = looked.has_tables
        self.directory.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, isolation_level=None)
        self.staged = StagedRows(self.connection)  # rows set aside by `stage` until their checkpoint
        try:
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            self.connection.execute("PRAGMA cache_size=-16384")  # 16 MiB: b-tree inserts stay in memory
            if self.connection.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                self.connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self.connection.executescript(_SCHEMA)
            # The version the file was written with, before `_upgrade` brings it to this one's layout.
            self.written_version = self._recorded_version() if existing else STORE_VERSION
            self._upgrade()
        except BaseException:
            self.connection.close()
            raise

    @classmethod
    def read_only(cls, directory: Path | str, *, resume: bool = False) -> Store:
        """The store of `directory` opened to read, as every reader opens it (report, transcript,
        the analyses, `agentsim.open`, watch, an import's checks, a resume's checks): nothing
        under the directory is written, not even SQLite's side files (agentsim/sqlite_reading.py),
        and no table is ever made. A file that is missing, empty, damaged, not agentsim's, records
        no experiment, or lacks a table or column its version has, or holds a value of the wrong
        type, is refused in one line (a UserError) before anything is read from it. A store of
        an earlier version is read in this one's layout through temporary views (in memory).
        `resume`: for a resume's checks (its refusals name a new --out DIR; a store that records
        no experiment is the resume's to refuse)."""
        store = _opened_to_read(directory, reader=not resume)
        if not resume and (not store.has_tables or "scenario" not in store.experiment()):
            store.close()
            raise DamagedStoreError(f"{store.path} records no experiment (a run that stopped before it began, or "
                                    f"another program's database); give the output directory of a run")
        return store

    def _recorded_version(self) -> int:
        row = self.connection.execute("SELECT value FROM experiment WHERE key = 'store_version'").fetchone()
        return int(json.loads(row[0])) if row else 1

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
                self.connection.execute(MOVES_VIEW)
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
        analyses read (a reader sees them moved: `experiment`)."""
        recorded = self.experiment()
        moved = _standin_moved(recorded)
        self.connection.executemany("INSERT OR REPLACE INTO experiment VALUES (?, ?)",
                                    [(key, json.dumps(moved[key], sort_keys=True)) for key in ("params", "standin")
                                     if key in moved and moved[key] != recorded.get(key)])

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
                                            f"was changed: {self.fix}") from None
                written = self._recorded_text("code_version") or "an older agentsim"
                raise OutputDirError(f"{self.path}: the checkpoint of run {run} cannot be continued by this agentsim "
                                     f"({error}; written by {written}); finish the runs with the agentsim that started "
                                     f"them, or start afresh with --out NEW_DIR") from None

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
        """Let go of the file (a writer first folds its WAL back into it, so that nothing but
        agentsim.db is left once it is closed)."""
        if self.writable:
            self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    # --- the experiment ------------------------------------------------------------------
    def experiment(self) -> dict[str, Any]:
        recorded = {key: json.loads(value) for key, value in self.connection.execute("SELECT key, value FROM experiment")}
        return recorded if self.writable or self.written_version >= 5 else _standin_moved(recorded)

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
        """Write a run's buffered rows (and those `stage` set aside) together with the
        checkpoint they lead to."""
        with self._transaction():
            connection = self.connection
            self.staged.copy(recorder.run)
            _insert(connection, recorder, "main")
            connection.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?)", (recorder.run, t, checkpoint))
        self.staged.drop(recorder.run)
        recorder.clear()

    def stage(self, recorder: Recorder) -> None:
        """Set a run's buffered rows aside until `commit` writes them with their checkpoint
        (`StagedRows`): a run of a million agents, whose checkpoints are written seconds apart,
        holds a bounded buffer. Rows reach the database only with their checkpoint, as ever."""
        with self._transaction():
            self.staged.add(recorder)
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


class _Transaction:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def __enter__(self) -> None:
        self.connection.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        self.connection.execute("COMMIT" if kind is None else "ROLLBACK")


def _insert(connection: sqlite3.Connection, recorder: Recorder, schema: str) -> None:
    """A recorder's rows into the database's tables (`schema` "main") or the staged ones ("temp")."""
    prefix = "main." if schema == "main" else "temp.staged_"
    connection.executemany(f"INSERT INTO {prefix}encounters VALUES (?, ?, ?, ?)", recorder.encounters)
    connection.executemany(f"INSERT INTO {prefix}decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           recorder.decisions)
    connection.executemany(
        f"INSERT INTO {prefix}decisions (run, t, agent, attempt, action, payoff, parsed, context, reply, prompt_tokens,"
        " completion_tokens, latency_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", recorder.answered)
    connection.executemany(f"INSERT INTO {prefix}decisions (run, t, agent, attempt, action, payoff) "
                           f"VALUES (?, ?, ?, ?, ?, ?)", recorder.bare)
    connection.executemany(f"INSERT INTO {prefix}rounds VALUES (?, ?, ?)", recorder.rounds)


def _opened_to_read(directory: Path | str, *, reader: bool) -> Store:
    """A read-only store of `directory`, checked whole (agentsim/store_layout.py); `reader`: for a reader
    (one with no table is refused by `read_only`), else for the writer about to open it."""
    store = Store.__new__(Store)
    store.directory = Path(directory)
    store.path = store.directory / DATABASE
    store.writable = False
    store.fix = "restore it from a copy" if reader else "restore it from a copy, or record into a new --out DIR"
    if not store.path.is_file():
        raise UserError(f"'{store.directory}' holds no {DATABASE}; give the output directory of a run (e.g. "
                        f"results/naming_game/TIMESTAMP)")
    if store.path.stat().st_size == 0:
        raise DamagedStoreError(f"{store.path} is empty (truncated); nothing was changed: {store.fix}")
    try:
        store.connection = open_read_only(store.path)
    except sqlite3.Error as error:
        raise DamagedStoreError(f"{store.path} cannot be read ({error}); nothing was changed: {store.fix}") from None
    try:
        checked = check_store(store.connection, store.path, reader=reader, fix=store.fix, current=STORE_VERSION)
    except BaseException:
        store.connection.close()
        raise
    store.has_tables, store.written_version = checked.has_tables, checked.written_version
    return store


def _standin_moved(experiment: dict[str, Any]) -> dict[str, Any]:
    """`experiment` with the stand-in's settings as its `standin` (before version 5 they were
    parameters named standin_KEY)."""
    params = experiment.get("params")
    if not isinstance(params, dict) or "standin" in experiment:
        return experiment
    settings = {key.removeprefix("standin_"): params[key] for key in sorted(params) if key.startswith("standin_")}
    kept = {key: value for key, value in params.items() if not key.startswith("standin_")}
    return experiment | {"params": kept, "standin": settings}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
