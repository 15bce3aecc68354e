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
from .errors import DamagedStoreError, OutputDirError, UserError
from .records import EncounterRecord
from .sqlite_reading import open_read_only

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
_VIEWS = (
    _MOVES_VIEW,
    """CREATE VIEW IF NOT EXISTS calls AS
    SELECT run, t, agent, attempt, parsed AS action, context, reply, prompt_tokens, completion_tokens, latency_us, error
    FROM decisions WHERE reply IS NOT NULL""",
    """CREATE VIEW IF NOT EXISTS decisions_by_model AS
    SELECT decisions.*, agents.model AS model, agents.kind AS kind FROM decisions JOIN agents USING (run, agent)""",
)

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
""".replace("{views}", "".join(view + ";\n" for view in _VIEWS))

# What a store's tables hold, checked before a reader reads it or a resume continues it: each
# column and the types SQLite may report of its values (`typeof`); a column added after the first
# layout by the version that added it (a store written before lacks it: `_upgrade` adds it).
_I, _T, _R, _B, _N = "integer", "text", "real", "blob", "null"
_COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
    "experiment": {"key": (_T,), "value": (_T,)},
    "runs": {"run": (_I,), "replicate": (_I,), "seed": (_I,), "backend": (_T,), "status": (_T,),
             "stop_reason": (_T, _N), "started": (_T, _N), "finished": (_T, _N), "summary": (_T, _N)},
    "agents": {"run": (_I,), "agent": (_I,), "kind": (_T, _N), "model": (_T, _N)},
    "encounters": {"run": (_I,), "t": (_I,), "round": (_I,), "outcome": (_I, _R, _N)},
    "decisions": {"run": (_I,), "t": (_I,), "agent": (_I,), "attempt": (_I,), "action": (_T, _N),
                  "payoff": (_R, _I, _N), "parsed": (_T, _N), "context": (_T, _N), "reply": (_T, _N),
                  "prompt_tokens": (_I, _N), "completion_tokens": (_I, _N), "latency_us": (_I, _N),
                  "error": (_T, _N), "probabilities": (_T, _N), "fallback": (_I, _N), "sampled_locally": (_I, _N)},
    "rounds": {"run": (_I,), "round": (_I,), "stats": (_T,)},
    "checkpoints": {"run": (_I,), "t": (_I,), "state": (_B,)},
}
_ADDED_IN = {("decisions", "probabilities"): 2, ("decisions", "fallback"): 2, ("decisions", "sampled_locally"): 4}
_DECLARED = {_I: "INTEGER", _T: "TEXT", _R: "REAL", _B: "BLOB"}  # each column's declared type, by its first kind
_KIND_NAMES = {_I: "whole numbers", _T: "text", _R: "numbers", _B: "bytes", _N: "nothing (NULL)"}


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
        for move in record.moves:
            agent = move.agent
            own = [call for call in calls if call.agent == agent] if calls else calls
            if not own:
                self.bare.append((run, t, agent, 0, move.action, move.payoff))
                continue
            last = own[-1]
            for call in own:
                if call is last and call.error is None and not call.probabilities:
                    self.answered.append((run, t, agent, call.attempt, move.action, move.payoff, call.action, call.context,
                                          call.reply, call.prompt_tokens, call.completion_tokens, call.latency_us))
                    continue
                final = call is last
                self.decisions.append((run, t, agent, call.attempt, move.action if final else None,
                                       move.payoff if final else None, call.action, call.context, call.reply,
                                       call.prompt_tokens, call.completion_tokens, call.latency_us, call.error,
                                       json.dumps(dict(call.probabilities)) if call.probabilities else None,
                                       1 if final and call.fallback else None, 1 if call.sampled_locally else None))

    def add_round(self, round_: int, stats: dict[str, Any]) -> None:
        self.rounds.append((self.run, round_, json.dumps(stats, separators=(",", ":"))))

    def clear(self) -> None:
        for rows in (self.encounters, self.decisions, self.answered, self.bare, self.rounds):
            rows.clear()


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
            with Store._reading(self.directory, reader=False) as looked:
                existing = looked.has_tables
        self.directory.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, isolation_level=None)
        try:
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
        store = cls._reading(directory, reader=not resume)
        if not resume and (not store.has_tables or "scenario" not in store.experiment()):
            store.close()
            raise DamagedStoreError(f"{store.path} records no experiment (a run that stopped before it began, or "
                                    f"another program's database); give the output directory of a run")
        return store

    @classmethod
    def _reading(cls, directory: Path | str, *, reader: bool) -> Store:
        """A read-only store of `directory`, checked (`_check_readable`); `reader`: for a reader
        (one with no table is refused by `read_only`), else for the writer about to open it."""
        store = cls.__new__(cls)
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
            store._check_readable(reader=reader)
        except BaseException:
            store.connection.close()
            raise
        return store

    def _check_readable(self, *, reader: bool) -> None:
        """Everything a reader or a resume relies on, checked before either reads: the file is
        agentsim's and whole, every table and column its version has is there, the experiment's
        values and the runs' summaries read back, and every column holds its type. A store of an
        older layout gets the views a reader reads it through (what `_upgrade` would write)."""
        self.has_tables = self._check_own(foreign_fix="give the output directory of an agentsim run" if reader else
                                          "agentsim never writes into it: choose another --out DIR")
        self.written_version = STORE_VERSION
        if not self.has_tables:
            return
        self.written_version = self._checked_version()
        self._check_layout()
        self._check_json()
        self._check_types()
        if reader:
            self._read_through_views()
        self.connection.execute("PRAGMA query_only=1")

    def _check_own(self, *, foreign_fix: str) -> bool:
        """Refuse, before writing anything, a file that is damaged or not agentsim's; say whether
        it holds any table (one with none is new: a disk that filled as agentsim made them)."""
        where = self.path
        try:
            application = self.connection.execute("PRAGMA application_id").fetchone()[0]
            tables = {row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            verdict = self.connection.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as error:
            raise DamagedStoreError(f"{where} is damaged or not a database ({error}); nothing was changed: "
                                    f"{self.fix}") from None
        if application != APPLICATION_ID and tables and not (application == 0 and {"experiment", "runs"} <= tables):
            raise OutputDirError(f"{where} is an SQLite database agentsim did not create; {foreign_fix}")
        if verdict != "ok":
            raise DamagedStoreError(f"{where} is damaged ({verdict}); nothing was changed: {self.fix}")
        return bool(tables)

    def _damaged(self, what: str) -> DamagedStoreError:
        return DamagedStoreError(f"{self.path} is damaged ({what}); nothing was changed: {self.fix}")

    def _checked_version(self) -> int:
        """The store's recorded version (1 before it was recorded), refused unless a whole number."""
        try:
            row = self.connection.execute("SELECT value FROM experiment WHERE key = 'store_version'").fetchone()
        except sqlite3.Error:
            raise self._damaged("its table 'experiment' is missing") from None
        if row is None:
            return 1
        try:
            version = json.loads(row[0])
        except (TypeError, ValueError, RecursionError):
            version = None
        if type(version) is not int or not 1 <= version <= 10**6:
            raise self._damaged(f"its store_version is {str(row[0])[:40]!r}, not a version number")
        return version

    def _check_layout(self) -> None:
        """Every table of this layout, with every column the store's version has (an older store
        lacks the columns added since, which `_upgrade` adds and a reader reads as NULL)."""
        tables = {name for (name,) in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table, columns in _COLUMNS.items():
            if table not in tables:
                raise self._damaged(f"its table '{table}' is missing")
            declared = {row[1]: str(row[2]).upper() for row in self.connection.execute(f"PRAGMA table_info({table})")}
            missing = [column for column in columns if column not in declared
                       and self.written_version >= _ADDED_IN.get((table, column), 1)]
            if missing:
                raise self._damaged(f"the table '{table}' lacks its column{'s' if len(missing) > 1 else ''} "
                                    f"{', '.join(missing)}")
            retyped = next((column for column, kinds in columns.items()
                            if column in declared and declared[column] != _DECLARED[kinds[0]]), None)
            if retyped is not None:
                raise self._damaged(f"the table '{table}' declares its column '{retyped}' {declared[retyped] or 'untyped'}, "
                                    f"not {_DECLARED[columns[retyped][0]]}")

    def _check_types(self) -> None:
        """Every value of every table of the type its column holds (SQLite keeps whatever a
        program puts in a column): one scan per table, taking each column's least and greatest
        `typeof` (in typeof's order, blob < integer < null < real < text, each column's kinds
        are a range, and a column's declared type keeps numbers out of text: `_check_layout`).
        About a second per million decisions."""
        for table, columns in _COLUMNS.items():
            present = {row[1] for row in self.connection.execute(f"PRAGMA table_info({table})")}
            checked = [column for column in columns if column in present]
            found = self.connection.execute(f"SELECT {', '.join(f'min(typeof({column})), max(typeof({column}))' for column in checked)} "
                                            f"FROM {table}").fetchone()
            for index, column in enumerate(checked):
                kinds, least, greatest = columns[column], found[2 * index], found[2 * index + 1]
                if least is None:  # an empty table
                    break
                wrong = next((kind for kind in (least, greatest) if not min(kinds) <= kind <= max(kinds)), None)
                if wrong is not None:
                    raise self._damaged(f"the table '{table}' holds {_KIND_NAMES[wrong]} in its column '{column}', "
                                        f"which holds {' or '.join(_KIND_NAMES[kind] for kind in kinds)}")

    def _read_through_views(self) -> None:
        """The views a reader reads (temporary, in this connection's memory, over the store's
        tables, so that a view dropped or rewritten in the file is not what is read); a store of
        an older layout read as `_upgrade` would bring it (its missing columns NULL, a version-1
        fallback from its error, option probabilities from before version 6 left out)."""
        present = {row[1] for row in self.connection.execute("PRAGMA table_info(decisions)")}
        if self.written_version < 6 or not set(_COLUMNS["decisions"]) <= present:
            columns = []
            for column in _COLUMNS["decisions"]:
                if column == "probabilities" and self.written_version < 6:
                    columns.append("NULL AS probabilities")
                elif column == "fallback" and column not in present:  # a version-1 fallback: a last row with an error
                    columns.append("CASE WHEN payoff IS NOT NULL AND error IS NOT NULL THEN 1 END AS fallback")
                else:
                    columns.append(column if column in present else f"NULL AS {column}")
            self.connection.execute(f"CREATE TEMP VIEW decisions AS SELECT {', '.join(columns)} FROM main.decisions")
        for view in _VIEWS:
            self.connection.execute(view.replace("CREATE VIEW IF NOT EXISTS", "CREATE TEMP VIEW"))

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
                    raise DamagedStoreError(f"{self.path}: {what} is damaged (not JSON); nothing was changed: "
                                            f"{self.fix}") from None
                expected = _SUMMARY_TYPE if table == "runs" else _EXPERIMENT_TYPES.get(key)
                if expected is not None and not (isinstance(read, expected[0]) and not isinstance(read, bool)
                                                 and expected[1](read)):
                    raise DamagedStoreError(f"{self.path}: {what} is damaged (not {expected[2]}); nothing was changed: "
                                            f"{self.fix}")

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
        payoffs: dict[tuple[int, str], float] = {}
        for run, model, action, fallback, count, payoff in self.rows(
                "SELECT d.run, a.model, d.action, d.fallback IS 1, COUNT(*), SUM(d.payoff) FROM decisions d "
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
            payoffs[run, model] = payoffs.get((run, model), 0.0) + (payoff or 0.0)
        for (run, model), total in payoffs.items():
            entry = result[run][model]
            entry["mean_payoff"] = round(total / entry["answers"], 6)
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
    "scenario_sha256": (str, lambda value: len(value) == 64 and all(char in "0123456789abcdef" for char in value),
                        "a SHA-256 digest"),
    "store_version": (int, lambda value: 1 <= value <= 10**6, "a version number"),
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
