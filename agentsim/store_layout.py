"""What an agentsim store holds (its tables, columns and views, and the values its experiment
and summaries take), and the check every opening makes before a reader reads a store or a run or
resume writes into it (`check_store`): the file is agentsim's and whole (`PRAGMA quick_check`),
every table and column its version has is there with its declared type, the experiment's values
and the runs' summaries read back as what they are, and every value of every column is of its
column's type. Anything else is refused in one line (a UserError) naming the table, column or
key, before anything is read from it or written to it. A reader of an older store reads it
through temporary views in this layout (in the connection's memory, never in the file)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import DamagedStoreError, OutputDirError

# SQLite's application_id of an agentsim database ("AGSM"): agentsim never writes into a file
# that is not its own. Databases written before it was set carry 0 and agentsim's tables.
APPLICATION_ID = 0x4147534D

MOVES_VIEW = """CREATE VIEW IF NOT EXISTS moves AS
    SELECT run, t, agent, action, payoff, fallback IS 1 AS fallback FROM decisions WHERE payoff IS NOT NULL"""

VIEWS = (
    MOVES_VIEW,
    """CREATE VIEW IF NOT EXISTS calls AS
    SELECT run, t, agent, attempt, parsed AS action, context, reply, prompt_tokens, completion_tokens, latency_us, error
    FROM decisions WHERE reply IS NOT NULL""",
    """CREATE VIEW IF NOT EXISTS decisions_by_model AS
    SELECT decisions.*, agents.model AS model, agents.kind AS kind FROM decisions JOIN agents USING (run, agent)""",
)

# What a store's tables hold, checked before a reader reads it or a resume continues it: each
# column and the types SQLite may report of its values (`typeof`); a column added after the first
# layout by the version that added it (a store written before lacks it: `_upgrade` adds it).
_I, _T, _R, _B, _N = "integer", "text", "real", "blob", "null"
COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
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
ADDED_IN = {("decisions", "probabilities"): 2, ("decisions", "fallback"): 2, ("decisions", "sampled_locally"): 4}
_DECLARED = {_I: "INTEGER", _T: "TEXT", _R: "REAL", _B: "BLOB"}  # each column's declared type, by its first kind
_KIND_NAMES = {_I: "whole numbers", _T: "text", _R: "numbers", _B: "bytes", _N: "nothing (NULL)"}


# What the experiment's values and the runs' summaries must be for a resume and the analyses
# to read them: (type, a check of the value, what to call it), by key.
_RUN_LIMIT = 10**9
EXPERIMENT_TYPES: dict[str, tuple[type | tuple[type, ...], Any, str]] = {
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
SUMMARY_TYPE: tuple[type, Any, str] = (dict, lambda value: True, "a mapping of the run's figures")




@dataclass
class StoreCheck:
    """One check of an opened store (`check_store`); `fix` is what a refusal tells the user to do."""

    connection: sqlite3.Connection
    path: Path
    fix: str
    has_tables: bool = False
    written_version: int = 1

    def run(self, *, reader: bool, current: int) -> None:
        """Everything a reader or a resume relies on, checked before either reads: the file is
        agentsim's and whole, every table and column its version has is there, the experiment's
        values and the runs' summaries read back, and every column holds its type. A store of an
        older layout gets the views a reader reads it through (what `_upgrade` would write)."""
        self.has_tables = self._check_own(foreign_fix="give the output directory of an agentsim run" if reader else
                                          "agentsim never writes into it: choose another --out DIR")
        self.written_version = current
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
        for table, columns in COLUMNS.items():
            if table not in tables:
                raise self._damaged(f"its table '{table}' is missing")
            declared = {row[1]: str(row[2]).upper() for row in self.connection.execute(f"PRAGMA table_info({table})")}
            missing = [column for column in columns if column not in declared
                       and self.written_version >= ADDED_IN.get((table, column), 1)]
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
        for table, columns in COLUMNS.items():
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
        if self.written_version < 6 or not set(COLUMNS["decisions"]) <= present:
            columns = []
            for column in COLUMNS["decisions"]:
                if column == "probabilities" and self.written_version < 6:
                    columns.append("NULL AS probabilities")
                elif column == "fallback" and column not in present:  # a version-1 fallback: a last row with an error
                    columns.append("CASE WHEN payoff IS NOT NULL AND error IS NOT NULL THEN 1 END AS fallback")
                else:
                    columns.append(column if column in present else f"NULL AS {column}")
            self.connection.execute(f"CREATE TEMP VIEW decisions AS SELECT {', '.join(columns)} FROM main.decisions")
        for view in VIEWS:
            self.connection.execute(view.replace("CREATE VIEW IF NOT EXISTS", "CREATE TEMP VIEW"))


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
                expected = SUMMARY_TYPE if table == "runs" else EXPERIMENT_TYPES.get(key)
                if expected is not None and not (isinstance(read, expected[0]) and not isinstance(read, bool)
                                                 and expected[1](read)):
                    raise DamagedStoreError(f"{self.path}: {what} is damaged (not {expected[2]}); nothing was changed: "
                                            f"{self.fix}")



def check_store(connection: sqlite3.Connection, path: Path, *, reader: bool, fix: str, current: int) -> StoreCheck:
    """Check the store `connection` reads (at `path`) whole, as the module's docstring says;
    `reader`: for a reader (it gets the views it reads through, and the connection is made
    query-only), else for a run or resume about to write; `current`: this agentsim's store
    version (what a file with no table yet will be written as)."""
    check = StoreCheck(connection, path, fix)
    check.run(reader=reader, current=current)
    return check
