"""An output directory's results as pandas DataFrames: what `agentsim.run(...)` returns and
`agentsim.open(DIR)` reads (docs/data.md describes every table and column).

    results = agentsim.open("results/critical_mass/20250101-120000")
    results.runs()             one row per run: its summary, flat (as runs.csv)
    results.moves()            one row per decision: run, t, round, agent, model, kind, action, payoff, ...
    results.decisions(prompts=True)
                               one row per call, with the prompt rebuilt from the store and the reply
    results.rounds()           one row per run and population round: the round's tallies, flat
    results.by_model()         one row per model (per run and model with per_run=True)
    results.report()           the HTML report and its figures (python -m agentsim report DIR)

Everything is read from the database (`agentsim.db`), so a directory the command line wrote, a
stopped one and a resumed one read alike. pandas is imported when a table is asked for. Every
column has one dtype whatever the runs did (agentsim/tables.py; docs/data.md lists them): pandas'
nullable dtypes where a value can be missing, and counts of 0 where nothing was counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .analysis.recorded import RecordedExperiment
from .errors import DamagedStoreError, UserError
from .flat import RUN_COLUMNS, by_model_rows, counted_as_zero, flatten, run_table_rows
from .store import DATABASE, MOVES, ROUNDS, SAMPLED_AGENTS, Store, recorded_level
from .summaries import total_by_model
from .tables import BY_MODEL_DTYPES, DECISION_DTYPES, MOVE_DTYPES, ROUND_DTYPES, RUN_DTYPES, typed

if TYPE_CHECKING:
    import pandas as pd

REPORT_DIR = "report"


class Results:
    """The results of one output directory (an experiment; a grid's cells are its runs'
    `variant` column)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        if not Store.exists(self.directory):
            inside = sorted(path.parent for path in self.directory.rglob(DATABASE)) if self.directory.is_dir() else []
            if inside:  # a folder of results folders (report reads them all; a Results is one experiment)
                shown = ", ".join(f"'{path}'" for path in inside[:3]) + (f" and {len(inside) - 3} more" if len(inside) > 3 else "")
                raise UserError(f"'{self.directory}' holds no {DATABASE} of its own but {len(inside)} results "
                                f"folder(s): {shown}; open one (agentsim.open(FOLDER)), or each: "
                                f"[agentsim.open(path.parent) for path in Path('{self.directory}').rglob('{DATABASE}')]")
            raise UserError(f"'{self.directory}' holds no {DATABASE}; give the output directory of a run "
                            f"(e.g. results/naming_game/TIMESTAMP)")
        self._recorded: RecordedExperiment = RecordedExperiment(self.directory)
        try:  # opened now (read-only, checked whole), so that a damaged or foreign file says so here, not at a table
            self._recorded.store  # noqa: B018
        finally:  # (and opened again by the thread that reads a table: `run` may build this on a worker thread)
            self._recorded.close()

    def __repr__(self) -> str:
        return f"Results({str(self.directory)!r})"

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def close(self) -> None:
        self._recorded.close()

    @property
    def store(self) -> Store:
        return self._recorded.store

    @property
    def record(self) -> str:
        """What the runs recorded (`--record`): "moves" (every encounter and decision), "rounds"
        (per-round tallies and the encounters of a sample of agents) or "summary" (each run's
        summary). Experiments recorded before the levels existed recorded moves."""
        return recorded_level(self._recorded.experiment)

    def _needs_moves(self, table: str, sample: bool) -> None:
        """Refuse, in one line naming the level, a table of every move from runs that kept fewer."""
        level = self.record
        if level == MOVES or (sample and level == ROUNDS):
            return
        if level == ROUNDS:
            raise UserError(f"{table} needs every move, and {self.directory} was recorded with --record {level}: its runs "
                            f"keep the per-round tallies (rounds()) and the encounters of a sample of about "
                            f"{SAMPLED_AGENTS} agents ({table.removesuffix(')')}sample=True)); rerun with --record moves "
                            f"for every move")
        raise UserError(f"{table} needs every move, and {self.directory} was recorded with --record {level}: its runs "
                        f"keep their summaries only (runs()); rerun with --record moves (or rounds) for moves")

    @property
    def experiment(self) -> dict[str, Any]:
        """What the experiment was: scenario, parameters, seed, backend, code version (the
        database's `experiment` table)."""
        return dict(self._recorded.experiment)

    def summary(self) -> dict[str, Any]:
        """`summary.json` as written at the experiment's end ({} while it runs); one that does not
        read back as a mapping is refused in one line (the store, which the tables read, is the record)."""
        path = self.directory / "summary.json"
        if not path.is_file():
            return {}
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            document = None
        if not isinstance(document, dict):
            raise DamagedStoreError(f"{path} is damaged (not a JSON object); the runs are in the store: "
                                    f"results.runs() reads them")
        return document

    # --- tables --------------------------------------------------------------------------------
    def runs(self) -> pd.DataFrame:
        """One row per run: the `runs` table's status and times (UTC datetimes) with the run's
        summary, flat (nested keys dotted): the columns of runs.csv."""
        import pandas as pd

        recorded = self.store.runs()
        frame = pd.DataFrame(run_table_rows(recorded), columns=None if recorded else list(RUN_COLUMNS))
        summarized = pd.Series([bool(row["summary"]) for row in recorded], index=frame.index, dtype=bool)
        return typed(frame, RUN_DTYPES, self._family_dtypes("summary_dtypes"), counted=summarized)

    def moves(self, *, situations: bool = False, sample: bool = False) -> pd.DataFrame:
        """One row per decision, in sequence order: `run`, `t`, `round`, `outcome` (the
        encounter's: naming game 1 success, 0 failure), `agent`, `model`, `kind`, `action` (the
        choice as the game reads it: a name), `payoff`, `fallback` (no reply gave it: keep it
        out of any share). With `situations`, where the game decodes its contexts (the naming
        games), `options` (in the order the prompt listed them) and `memory` ((own, partner,
        payoff) of each remembered encounter) that the choice was made from, None where the
        family's situation keeps none, and `situation`: the decoded situation itself, whatever
        its family (a layer game's `Ask`: its facts as `memory`; the commons' situation). A
        game on the layer adds `move` (the ask's name) and `step` (its place in the round), its
        encounters' rows in the order asked.

        Runs recorded with `--record rounds` keep the encounters of a sample of agents only:
        `sample=True` reads those (every encounter a sampled agent took part in, whole); without
        it, and at `--record summary`, asking refuses in one line naming the level."""
        import pandas as pd

        self._needs_moves("moves()", sample)
        frame = pd.read_sql_query(
            f"SELECT m.run, m.t, e.round, e.outcome, m.agent, a.model, a.kind, m.action, m.payoff, m.fallback "
            f"FROM {_MOVES} m JOIN encounters e USING (run, t) JOIN agents a USING (run, agent) "
            f"ORDER BY m.run, m.t, m.agent, m.attempt", self.store.connection)
        frame["fallback"] = frame["fallback"].astype(bool)
        frame = typed(frame, MOVE_DTYPES)
        scenario = self._recorded.scenario
        frame["round"] += int(getattr(scenario, "round_base", 0))  # as the game numbers its rounds (the layer: from 1)
        steps = self._name_moves(frame)
        if situations:
            codec = self._scenario().codec
            if codec is None:
                raise UserError(f"{type(self._scenario()).__name__} keeps no decodable situation in its contexts; "
                                f"read them with decisions(prompts=True)")
            decoded: dict[str, Any] = {}

            def situation(context: str | None) -> Any:
                if not context:
                    return None
                if context not in decoded:
                    decoded[context] = codec.decode(context)
                return decoded[context]

            found = [situation(context) for (context,) in self.store.rows(_MOVE_CONTEXTS)]
            frame["situation"] = found
            # (the naming games' situations keep options and a memory; another family's may keep neither)
            frame["options"] = [_field_tuple(each, "options") for each in found]
            frame["memory"] = [_field_tuple(each, "memory") for each in found]
        if steps:  # an encounter's moves in the order they were made
            frame = frame.sort_values(["run", "t", "step", "agent"], kind="stable").reset_index(drop=True)
        return frame

    def decisions(self, *, prompts: bool = False, sample: bool = False) -> pd.DataFrame:
        """Every row of the `decisions` table (a row per call; a bare row for a decision taken
        without a call) with the agent's `model` and `kind`. With `prompts`, each call's
        `prompt`, rebuilt exactly from its stored context (`Store.messages`) as the text of
        its messages ("[role] content" each), and `messages`, the same as the list of
        {"role", "content"} a chat API was sent, beside its `reply`: one query per call, so ask
        for it on small experiments or filter first. `sample` as in `moves`."""
        import pandas as pd

        self._needs_moves("decisions()", sample)
        frame = pd.read_sql_query(
            "SELECT d.*, a.model, a.kind FROM decisions d JOIN agents a USING (run, agent) "
            "ORDER BY d.run, d.t, d.agent, d.attempt", self.store.connection)
        for flag in ("fallback", "sampled_locally"):  # 1 where it is so, NULL (not 0) elsewhere
            frame[flag] = frame[flag].eq(1)
        if prompts:
            scenario = self._scenario()
            messages = [
                None if pd.isna(reply) else [{"role": message.role, "content": message.content} for message in
                                             self.store.messages(scenario, int(run), int(t), int(agent), int(attempt))]
                for run, t, agent, attempt, reply in zip(frame["run"], frame["t"], frame["agent"], frame["attempt"],
                                                         frame["reply"], strict=True)]
            frame["prompt"] = [None if sent is None else "\n\n".join(f"[{each['role']}] {each['content']}" for each in sent)
                               for sent in messages]
            frame["messages"] = messages  # as sent: a list of {"role", "content"} (a chat API's messages)
        return typed(frame, DECISION_DTYPES)

    def rounds(self) -> pd.DataFrame:
        """One row per run and population round: the round's tallies (the `rounds` table's
        JSON, spread into columns: naming game `interactions`, `successes`, `success_rate`,
        `productions.NAME`, `fallbacks`, `alternative_share`)."""
        import pandas as pd

        rows = [{"run": run, "round": round_} | flatten(json.loads(stats)) for run, round_, stats in
                self.store.rows("SELECT run, round, stats FROM rounds ORDER BY run, round")]
        frame = pd.DataFrame(rows, columns=None if rows else ["run", "round"])
        return typed(frame, ROUND_DTYPES, self._family_dtypes("round_dtypes"))

    def by_model(self, *, per_run: bool = False) -> pd.DataFrame:
        """Each model's decisions, fallbacks, answers, mean payoff and `choices.ACTION` (how
        often its answers chose each action; fallbacks left out): one row per model over the
        finished runs, or with `per_run` one row per run and model (as by_model.csv)."""
        import pandas as pd

        counted = self.store.by_model()
        if per_run:
            rows = by_model_rows(counted)
            return typed(pd.DataFrame(rows, columns=None if rows else ["run", "model"]), BY_MODEL_DTYPES)
        done = {row["run"] for row in self.store.runs() if row["status"] == "done"}
        totals = total_by_model([models for run, models in counted.items() if run in done])
        rows = []
        for model, entry in sorted(totals.items()):
            row = {"model": model} | {key: value for key, value in entry.items() if key != "choices"}
            row.update({f"choices.{action}": count for action, count in sorted(entry["choices"].items())})
            rows.append(row)
        rows = counted_as_zero(rows, "choices.")
        return typed(pd.DataFrame(rows, columns=None if rows else ["model"]), BY_MODEL_DTYPES)

    # --- the report ------------------------------------------------------------------------------
    def report(self, out: str | Path | None = None) -> Path:
        """Build the report (`python -m agentsim report DIR`): figures (PNG, with their data as
        CSV), tables and `report.html`, under `out` (default DIR/report); returns the HTML's path."""
        from .analysis.report import REPORT_HTML, build_report  # lazy: matplotlib, only for a report

        target = Path(out) if out is not None else self.directory / REPORT_DIR
        build_report(self.directory, target)
        return target / REPORT_HTML

    def figures(self, out: str | Path | None = None) -> list[Path]:
        """The report's figures (PNG), building the report first if it is not there."""
        target = Path(out) if out is not None else self.directory / REPORT_DIR
        if not target.is_dir():
            self.report(target)
        return sorted(target.glob("*.png"))

    def _name_moves(self, frame: pd.DataFrame) -> bool:
        """A `move` column where the game's situations name the ask a move answered (a layer
        game's: "choose", or "give" and "punish" in a game of several moves), and a `step`
        column where they number the asks of an encounter (a layer game's: 1, 2, ... in the
        order asked, asks made together sharing one); True where `step` was added. Contexts
        are read one at a time, in the frame's order, and only their names and steps kept."""
        import pandas as pd

        scenario = self._recorded.scenario
        codec = scenario.codec if scenario is not None else None
        if codec is None or frame.empty:
            return False
        names: list[str | None] = []
        steps: list[int | None] = []
        for (context,) in self.store.rows(_MOVE_CONTEXTS):
            try:
                situation = codec.decode(context) if context else None
            except (ValueError, KeyError, TypeError):  # a context this codec does not read: no column, not a failure
                return False
            move = getattr(situation, "move", None)
            if context and not isinstance(move, str):
                return False  # this game's situations name no move
            names.append(move)
            step = getattr(situation, "step", None)
            steps.append(step if isinstance(step, int) and step > 0 else None)
        if len(names) == len(frame) and any(names):
            frame["move"] = pd.array(names, dtype="string")
        if len(steps) == len(frame) and any(step is not None for step in steps):
            frame["step"] = pd.array(steps, dtype="Int64")
            return True
        return False

    def _family_dtypes(self, which: str) -> Mapping[str, str]:
        """The dtypes the recorded scenario's family declares for its columns (none where the
        scenario cannot be rebuilt: those columns are typed by their values)."""
        scenario = self._recorded.scenario
        return getattr(scenario, which, {}) if scenario is not None else {}

    def _scenario(self) -> Any:
        scenario = self._recorded.scenario
        if scenario is None:
            raise UserError(self._recorded.unresolved or f"the scenario of {self.directory} cannot be rebuilt")
        return scenario


# Every move (a decision's last row) with its attempt: a game may ask an agent again in one
# encounter, its later decision's rows continuing the agent's count of attempts there.
_MOVES = "(SELECT run, t, agent, attempt, action, payoff, fallback IS 1 AS fallback FROM decisions WHERE payoff IS NOT NULL)"
# Each move's context, in `moves()`' order: that of its decision's first row (the latest row
# with a context at or before the move's attempt).
_MOVE_CONTEXTS = (
    f"SELECT (SELECT d.context FROM decisions d WHERE d.run = m.run AND d.t = m.t AND d.agent = m.agent "
    f"AND d.attempt <= m.attempt AND d.context != '' ORDER BY d.attempt DESC LIMIT 1) "
    f"FROM {_MOVES} m JOIN encounters e USING (run, t) JOIN agents a USING (run, agent) "
    f"ORDER BY m.run, m.t, m.agent, m.attempt")


def _field_tuple(situation: Any, name: str) -> tuple[Any, ...] | None:
    """A decoded situation's `name` as a tuple, None where there is no situation or no such field."""
    value = getattr(situation, name, None)
    return None if value is None else tuple(value)
