"""GAMA-Bench's published runs (`raw_results/`, one JSON file per run: `meta`, `round_records`,
`player_data`) read into agentsim's store, one experiment per game, model, prompt version and
condition, one run per file, so that `agentsim.open`, `report` and `score` read them as they
read agentsim's own runs.

A file is data: it is parsed as JSON (nothing in it is executed or imported), bounded in size,
and checked before anything is written; a file that is not a GAMA-Bench run is refused in one
line naming it. Where each run came from is recorded (`imported` in the experiment, `file` in
the run's summary); the model is named as GAMA-Bench names it: the prefix of its file names
(`gpt-4o_guessing_game_v1_1.json` is `gpt-4o`), else the model its players record.

The condition is what the file name adds after the version: `_1` ... `_5` are the replicate
runs of the leaderboard (condition ""), a file with nothing after the version is the single
run GAMA-Bench's robustness tables use (condition "single"), and `_cot1`, `_role2`, `_t3`, ...
are conditions of their own (`cot1`, `role2`, `t3`; a trailing `_N` is again a replicate).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import checkpoints
from ...errors import UserError
from ...records import EncounterRecord, Move
from ...staging import path_name, refuse_occupied, staged
from ...store import Recorder, Store
from . import SCENARIO_PREFIX
from .rules import FIRST_PRICE, PARAMETERS, SECOND_PRICE, payoffs
from .scoring import game_name, score

MAX_FILE_BYTES = 16 * 1024 * 1024  # the largest published file is about 0.2 MB
MAX_FILES = 20_000
MAX_PLAYERS = 1_000
MAX_ROUNDS = 10_000
BACKEND = "imported:gamabench"
SOURCE = "GAMA-Bench raw_results (github.com/CUHK-ARISE/GAMABench)"
SINGLE = "single"
MAX_DEPTH = 16  # JSON nesting of a raw_results file (GAMA-Bench's nest 5 deep)
_VERSION = re.compile(r"^v\d{1,4}$")

# What each game's round records hold where the scores and payoffs read them.
RECORD_FIELDS: dict[str, dict[str, str]] = {
    "guessing_game": {"responses": "numbers", "mean": "number", "winner": "number"},
    "bar_game": {"responses": "words", "go_ratio": "number", "winner": "key"},
    "divide_dollar": {"responses": "numbers", "total_proposal": "number"},
    "public_goods": {"responses": "numbers", "total_tokens": "number"},
    "diner_dilemma": {"responses": "words", "cheap_player": "number", "avg_cost": "number"},
    "sealed_bid_auction": {"responses": "numbers", "valuations": "numbers", "utility": "numbers"},
    "battle_royale": {"responses": "keys", "player_shooting": "key", "shot_player": "key", "action": "key",
                      "out": "flag"},
    "pirate_game": {"gold_distribution": "numbers", "responses": "words"},
}
MODES = {"bar_game": ("implicit", "explicit"), "sealed_bid_auction": (FIRST_PRICE, SECOND_PRICE)}
_KINDS = {"number": "a finite number", "numbers": "a list of finite numbers", "words": "a list of words",
          "key": "a player or a word", "keys": "a list of players or words", "flag": "true or false"}

# The key of a round record that tells each game apart (its `meta` does not always).
MARKS = {"guessing_game": "mean_ratio", "bar_game": "go_num", "divide_dollar": "total_proposal",
         "public_goods": "total_tokens", "diner_dilemma": "cheap_player", "sealed_bid_auction": "valuations",
         "battle_royale": "player_shooting", "pirate_game": "gold_distribution"}
_NAME = re.compile(r"^(?P<model>.*?)_?(?P<game>guessing_game|bar_game(?:_implicit|_explicit)?|divide_dollar|public_goods|"
                   r"diner_dilemma|sealed_bid_auction|battle_royale|pirate_game)_(?P<version>v\d+)(?P<rest>.*)$")


@dataclass(frozen=True, kw_only=True)
class RawRun:
    """One file of raw_results, checked and read."""

    file: str  # relative to the directory imported
    base: str  # the game (rules.PARAMETERS key)
    game: str  # the reported game (the bar game and the auction by mode)
    model: str
    version: str
    condition: str
    params: dict[str, Any]
    records: list[dict[str, Any]]
    players: list[tuple[str, str]]  # (kind, model) of each player, player_0 first
    choices: list[list[Any]]  # each player's recorded choice per round, where player_data keeps them
    score: float


def find_files(source: Path) -> list[Path]:
    if not source.is_dir():
        raise UserError(f"'{source}' is not a directory; give GAMA-Bench's raw_results/ directory (or one of its "
                        f"game folders)")
    files = sorted(path for path in source.rglob("*.json") if path.is_file())
    if not files:
        raise UserError(f"no JSON files under '{source}'; give GAMA-Bench's raw_results/ directory")
    if len(files) > MAX_FILES:
        raise UserError(f"'{source}' holds {len(files)} JSON files, more than {MAX_FILES}; import its game folders one by one")
    return files


def read_run(path: Path, root: Path) -> RawRun:
    """The run in `path`; a UserError naming the file and what is wrong if it is not one."""
    where = path.relative_to(root).as_posix() if path != root else path.name
    try:
        return _read(path, where)
    except UserError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError) as error:
        detail = f"missing {error}" if isinstance(error, KeyError) else f"{type(error).__name__}: {error}"
        raise UserError(f"{where}: not a GAMA-Bench run ({detail}); import only raw_results/ files") from None


def _read(path: Path, where: str) -> RawRun:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise UserError(f"{where}: larger than {MAX_FILE_BYTES >> 20} MiB, not a GAMA-Bench run; leave it out")
    document = parse_json(path.read_bytes(), where)
    meta, records = document["meta"], document["round_records"]
    players_data = document.get("player_data") or []
    if not isinstance(meta, dict) or not isinstance(records, list) or not isinstance(players_data, list):
        raise TypeError("meta is an object, round_records and player_data lists")
    if not records or len(records) > MAX_ROUNDS or not all(isinstance(record, dict) for record in records):
        raise ValueError(f"round_records holds 1 to {MAX_ROUNDS} objects")
    bases = [base for base, mark in MARKS.items() if mark in records[0]]
    if len(bases) != 1:
        raise ValueError("its round records are those of none of the eight games")
    base = bases[0]
    params = {key: value for key, value in meta.items() if key not in ("name_exp", "round_id", "version", "models", "model")}
    params = PARAMETERS[base] | params
    players = params["player_num"]
    if not isinstance(players, int) or not 1 <= players <= MAX_PLAYERS:
        raise ValueError(f"player_num is an integer from 1 to {MAX_PLAYERS}")
    for record in records:
        if not isinstance(record["responses"], list) or len(record["responses"]) > players or not all(
                isinstance(value, str | int | float) and not isinstance(value, bool) for value in record["responses"]):
            raise ValueError("a round's responses are a list of at most player_num numbers or words")
    check_values(base, params, records, where)
    version = meta["version"]
    if not isinstance(version, str) or not _VERSION.match(version):
        raise UserError(f"{where}: meta.version is {_shown(version)}, not a prompt version such as v1; import only "
                        f"raw_results/ files")
    named = _NAME.match(path.stem)
    models = [str(player.get("model", "")) for player in players_data if isinstance(player, dict)]
    model = _model(named.group("model") if named else "", meta, models)
    kinds = [("rule" if name.startswith(("specified", "user")) else "llm", name or model) for name in models]
    kinds += [("llm", model)] * (players - len(kinds))
    choices = [list(player.get("records") or []) if isinstance(player, dict) else [] for player in players_data]
    run = RawRun(file=where, base=base, game=game_name(base, params), model=model, version=version,
                 condition=_condition(named.group("rest") if named else ""), params=params, records=records,
                 players=kinds[:players], choices=choices, score=score(base, params, records))
    round_moves(run)  # every round's choices and payoffs read, before anything is written
    return run


def parse_json(data: bytes, where: str) -> Any:
    """A file's JSON, refused in one line naming it if it is not JSON, nests deeper than any
    run does (MAX_DEPTH), or holds NaN or an infinity (which JSON has no number for)."""
    def refuse_constant(name: str) -> Any:
        raise UserError(f"{where}: holds {name}, not a number JSON has (a GAMA-Bench run records finite numbers); "
                        f"import only raw_results/ files")

    try:
        document = json.loads(data, parse_constant=refuse_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{where}: not JSON ({error}); import only raw_results/ files") from None
    except RecursionError:
        document = None
        depth = MAX_DEPTH + 1
    else:
        depth = _depth(document, where)
    if depth > MAX_DEPTH:
        raise UserError(f"{where}: nested more than {MAX_DEPTH} deep, not a GAMA-Bench run; import only raw_results/ "
                        f"files")
    return document


def _depth(document: Any, where: str) -> int:
    """How deep `document` nests (without recursion), refusing an infinite number on the way
    (`1e999` reads as one)."""
    deepest, stack = 0, [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"{where}: holds {value}, not a finite number; import only raw_results/ files")
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                return depth
            stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return deepest


def check_values(base: str, params: dict[str, Any], records: list[dict[str, Any]], where: str) -> None:
    """The values the scores and payoffs read, of the types GAMA-Bench writes: every parameter
    its defaults give as a number a finite number (never a boolean or a text), each round's
    fields as the game records them; one line naming the first that is not."""
    for key, default in PARAMETERS[base].items():
        value = params.get(key)
        if isinstance(default, (int, float)) and not _number(value):
            raise UserError(f"{where}: meta.{key} is {_shown(value)}, not a number; import only raw_results/ files")
        if isinstance(default, str) and not isinstance(value, str):
            raise UserError(f"{where}: meta.{key} is {_shown(value)}, not a text; import only raw_results/ files")
    modes = MODES.get(base)
    if modes is not None and params.get("mode") not in modes:
        raise UserError(f"{where}: meta.mode is {_shown(params.get('mode'))}, not one of {', '.join(map(repr, modes))}; "
                        f"import only raw_results/ files")
    for number, record in enumerate(records, start=1):
        for field, kind in RECORD_FIELDS[base].items():
            if field not in record:
                raise UserError(f"{where}: not a GAMA-Bench run (round {number} is missing '{field}'); import only "
                                f"raw_results/ files")
            value = record[field]
            fits = {"number": _number(value), "flag": isinstance(value, bool), "key": _key(value),
                    "numbers": isinstance(value, list) and all(_number(item) for item in value),
                    "words": isinstance(value, list) and all(isinstance(item, str) for item in value),
                    "keys": isinstance(value, list) and all(_key(item) for item in value)}[kind]
            if not fits:
                raise UserError(f"{where}: round {number}'s {field} is {_shown(value)}, not {_KINDS[kind]}; import only "
                                f"raw_results/ files")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _key(value: Any) -> bool:
    """A player's number or name, or "null" (GAMA-Bench writes them as text, some as numbers)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _model(prefix: str, meta: dict[str, Any], players: list[str]) -> str:
    if prefix:
        return prefix
    if isinstance(meta.get("models"), str) and meta["models"]:
        return str(meta["models"])
    names = sorted({name for name in players if name})
    return "+".join(names) or "unknown"


def _condition(rest: str) -> str:
    if not rest:
        return SINGLE
    condition = re.sub(r"_\d+$", "", rest).lstrip("_")
    return "" if condition.isdigit() else condition


def experiment_directory(out: Path, run: RawRun) -> Path:
    """Where a run's experiment goes: under `out`, names made safe (agentsim/staging.py), never a
    path a file's content gives (the game is one of GAMES, the version checked as `vN`)."""
    return out / path_name(run.game) / path_name(run.model) / path_name(run.version + (f"-{run.condition}" if run.condition else ""))


def import_runs(source: Path, out: Path) -> dict[Path, list[RawRun]]:
    """Read every file under `source` (all checked first), then write one experiment per
    game, model, version and condition into a new results directory `out`, whole or not at
    all (agentsim/staging.py); returns what went where."""
    refuse_occupied(out)
    files = find_files(source)
    groups: dict[Path, list[RawRun]] = defaultdict(list)
    for path in files:
        run = read_run(path, source)
        groups[experiment_directory(out, run)].append(run)
    with staged(out) as folder:
        for directory, runs in groups.items():
            _write(folder / directory.relative_to(out), runs, source)
    return dict(groups)


def _write(directory: Path, runs: list[RawRun], source: Path) -> None:
    first = runs[0]
    store = Store(directory)
    try:
        store.set_experiment({
            "scenario": SCENARIO_PREFIX + first.base, "params": first.params, "seed": 0, "backend": BACKEND,
            "gamabench": {"game": first.game, "model": first.model, "version": first.version,
                          "condition": first.condition},
            "imported": {"from": SOURCE, "source": str(source.resolve()), "files": [run.file for run in runs]},
        })
        for number, run in enumerate(runs, start=1):
            _write_run(store, number, run)
    finally:
        store.close()


def _write_run(store: Store, number: int, run: RawRun) -> None:
    store.begin_run(number, replicate=number - 1, seed=0, backend=BACKEND,
                    agents=[(index, kind, model) for index, (kind, model) in enumerate(run.players)])
    recorder = Recorder(run=number)
    for index, (record, moves) in enumerate(zip(run.records, round_moves(run), strict=True)):
        recorder.add(EncounterRecord(t=index + 1, round=index + 1, outcome=0, moves=moves, calls=[]))
        recorder.add_round(index + 1, record)
    store.commit(recorder, checkpoints.dumps({"imported": run.file}), len(run.records))
    store.set_status(number, "done", summary={"file": run.file, "score": run.score, "rounds": len(run.records)})


def round_moves(run: RawRun) -> list[list[Move]]:
    """Each round's moves: who chose what, and the payoff the game's rules give it."""
    rounds = []
    for index, record in enumerate(run.records):
        agents, actions = _actions(run, index, record)
        if any(not 0 <= agent < len(run.players) for agent in agents):
            raise ValueError(f"round {index + 1} names a player beyond player_num")
        paid = payoffs(run.base, record if run.base == "pirate_game" else record | {"responses": actions}, run.params)
        rounds.append([Move(agent=agent, action=_text(action), payoff=float(payoff))
                       for agent, action, payoff in zip(agents, actions, paid, strict=False)])
    return rounds


def _actions(run: RawRun, index: int, record: dict[str, Any]) -> tuple[list[int], list[Any]]:
    """Who chose what in round `index`: each player's own record where player_data keeps one
    (GAMA-Bench shuffles some games' `responses` before saving them), else the responses in
    order; the shooter alone in Battle Royale; in the Pirate Game the pirates still aboard, the
    proposer's choice its proposal."""
    responses = record["responses"]
    if run.base == "battle_royale":
        return [int(str(record["player_shooting"]))], list(responses[:1])
    if run.base == "pirate_game":
        seats = range(index, index + len(responses))
        return list(seats), [record["gold_distribution"], *responses[1:]]
    own = [choices[index] for choices in run.choices if len(choices) == len(run.records)]
    if len(own) == len(responses) and sorted(map(str, own)) == sorted(map(str, responses)):
        return list(range(len(own))), own
    return list(range(len(responses))), list(responses)


def _text(action: Any) -> str:
    return action if isinstance(action, str) else json.dumps(action)
