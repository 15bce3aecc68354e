"""`python -m agentsim reenact IMPORTED_DIR --templates GAMA_BENCH/prompt_template --out DIR`:
each imported GAMA-Bench run (`import gamabench`) played again in agentsim's game, in
GAMA-Bench-exact mode, with what the file records as each player's answers, and compared with
the file reply by reply: agentsim's prompt with the conversation the file keeps (byte for
byte), agentsim's reading with the value GAMA-Bench's runner read, and the round's outcome
with the recorded round (its record, the player's utility where the runner keeps one, and the
report the player was told). The proof that a model scored in agentsim is asked, read and
scored as GAMA-Bench asks, reads and scores it.

What a file keeps, and so what is compared (docs/reproducing-gamabench.md):

- No reply as the model wrote it: each player's `records` (and the round's `responses`) are
  what the runner read. agentsim answers each ask with that value as the runner's answer
  format writes it (a Pirate Game plan as the runner printed it in its reports); where a
  Gemini run shows the runner asked again (its request twice in the conversation), agentsim
  is first answered with an empty reply, which it cannot read either.
- The conversation: for OpenAI-style models every message but the requests, and only those
  left after the runner's drops of old messages; for Gemini models everything, the requests
  (each attempt) included. A reply's prompt is equal when every message of it the file keeps
  is; the last report a player gets is checked with its last reply's outcome.
- The dice of Battle Royale (the runner's are not seeded) are the recorded ones.

Each run is played with the texts of the checkout as they are, and where the checkout is a
git repository and that leaves a difference, with each earlier version of the game's texts in
its history (GAMA-Bench's runs were made over a year of it): the version that reproduces the
most replies is kept and named in the CSV.
"""

from __future__ import annotations

import ast
import asyncio
import csv
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...analysis.recorded import find_experiments
from ...errors import UserError
from ...gamekit import KitState
from ...llm.base import Completion, Request
from ...model import BackendShare, PopulationModel
from ...scenario import as_scenario
from ...scenario_files import load_scenario
from . import SCENARIO_PREFIX
from .base import GamaGame
from .checkout import Checkout
from .exact import CONVERSATION, STRUCTURE, gemini_turns, system_of
from .exact_reading import RunnerAnswer
from .importer import MAX_FILE_BYTES, parse_json
from .rules import PARAMETERS

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "gamabench"
COLUMNS = ["run", "game", "revision", "round", "player", "move", "attempts", "prompt_equal", "choice_equal",
           "outcome_equal", "role", "differs"]
SHUFFLED = {"guessing_game": "responses", "divide_dollar": "responses"}  # the runner shuffles these before it saves them
UTILITY = ("bar_game", "divide_dollar", "public_goods", "diner_dilemma", "sealed_bid_auction")
CONDITION = re.compile(r"^(cot|role)(\d)$")
MAX_REASKS = 100  # a Gemini run keeps every attempt: up to 43 at one ask in the published runs


@dataclass
class Reply:
    """One answer of one player in one round, and how it compared."""

    round: int
    player: int
    move: str
    attempts: int = 0
    prompt: list[str] = field(default_factory=list)  # what differed, by kind (empty: equal)
    choice: list[str] = field(default_factory=list)
    outcome: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    file: str
    game: str
    revision: str
    replies: list[Reply]
    note: str = ""
    role: int | None = None  # the role condition the run's description shows, where its name does not say it
    unplayable: bool = False  # no version of the checkout's texts writes its description

    @property
    def equal(self) -> int:
        return sum(not (reply.prompt or reply.choice or reply.outcome) for reply in self.replies)


@dataclass(frozen=True)
class RawRun:
    """A raw_results file as reenact reads it (JSON only)."""

    file: str
    game: str  # the reported game (bar_game_implicit, sealed_bid_auction_second_price, ...)
    base: str  # rules.PARAMETERS key
    condition: str
    document: dict[str, Any]

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self.document["meta"])

    @property
    def records(self) -> list[dict[str, Any]]:
        return list(self.document["round_records"])

    @property
    def players(self) -> list[dict[str, Any]]:
        return [player for player in self.document.get("player_data") or [] if isinstance(player, dict)]

    @property
    def gemini(self) -> bool:
        return any(str(player.get("model", "")).startswith("gemini") for player in self.players)


# --- reading the imported runs --------------------------------------------------------------------
def imported_runs(directory: Path) -> list[RawRun]:
    """Every GAMA-Bench run imported under `directory`, read again from the file it came from."""
    runs = []
    for experiment in find_experiments(directory):
        try:
            if not experiment.scenario_name.startswith(SCENARIO_PREFIX) or "imported" not in experiment.experiment:
                continue
            imported = dict(experiment.experiment["imported"])
            named = dict(experiment.experiment.get("gamabench") or {})
            source = Path(str(imported.get("source", "")))
            for file in imported.get("files") or []:
                runs.append(_raw(source, str(file), experiment.scenario_name.removeprefix(SCENARIO_PREFIX),
                                 str(named.get("game", "")), str(named.get("condition", ""))))
        finally:
            experiment.close()
    if not runs:
        raise UserError(f"no imported GAMA-Bench runs under '{directory}'; import them first: python -m agentsim import "
                        f"gamabench GAMABench/raw_results --out {directory}")
    return runs


def _raw(source: Path, file: str, base: str, game: str, condition: str) -> RawRun:
    path = source / file
    if not path.is_file():
        raise UserError(f"the imported runs came from '{source}', which holds no '{file}' now; reenact reads each run's "
                        f"file again (its conversations): put the raw_results/ directory back there, or import it again")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise UserError(f"'{path}' is larger than {MAX_FILE_BYTES >> 20} MiB, not a GAMA-Bench run")
    document = parse_json(path.read_bytes(), str(path))  # the importer's bounded reading: depth, NaN
    if not isinstance(document, dict) or not isinstance(document.get("round_records"), list):
        raise UserError(f"'{path}' is not a GAMA-Bench run; it changed since it was imported")
    return RawRun(file=file, game=game or base, base=base, condition=condition, document=document)


# --- the game to play it in -----------------------------------------------------------------------
def scenario_for(run: RawRun, checkout: Checkout, scenarios: Path, role: int | None = None) -> GamaGame[Any]:
    """agentsim's game for `run`: its scenario file's class, in GAMA-Bench-exact mode, with
    the run's parameters (as the file's `meta` has them), prompt version and condition."""
    path = scenarios / f"{run.base}.py"
    if not path.is_file():
        raise UserError(f"no scenario file '{path}'; give the folder of agentsim's GAMA-Bench games: --scenarios "
                        f"AGENTSIM/scenarios/gamabench")
    scenario, _ = load_scenario(path)
    game = getattr(scenario, "game", scenario)  # the layer's engine wraps the game the file writes
    if not isinstance(game, GamaGame):
        raise UserError(f"'{path}' defines no GAMA-Bench game")
    meta = run.meta
    params = type(game).Params
    values = {key: meta[key] for key in PARAMETERS[run.base] if key in meta and key in params.field_names()}
    condition = CONDITION.match(run.condition or "")
    rounds = len(run.records)
    settings: dict[str, Any] = {
        **values, "agents": int(meta["player_num"]), "max_rounds": max(rounds, int(meta.get("round_id") or rounds)),
        "version": str(meta.get("version", "v1")), "exact": True, "prompt_templates": str(checkout.templates),
        "revision": checkout.revision, "structure": "gemini" if run.gemini else "messages", "max_reasks": MAX_REASKS,
    }
    if run.base in ("battle_royale", "pirate_game"):  # no rounds in their texts: as many as the file has
        settings["max_rounds"] = rounds
    if condition:
        settings[condition.group(1)] = int(condition.group(2))
    if role is not None:
        settings["role"] = role
    if run.base == "sealed_bid_auction" and isinstance(meta.get("seed"), int):
        settings["auction_seed"] = meta["seed"] - rounds  # saved after counting up once a round
    game_class: type[GamaGame[Any]] = type(game)
    if run.base == "battle_royale":  # the runner's dice are not seeded: the file's
        outs = [bool(record.get("out")) for record in run.records]
        game_class = type(game_class.__name__, (game_class,),
                          {"shot_hits": lambda self, number, shooter, rate, rng: outs[number - 1]})
    return game_class(**settings)


class Reenacted(Exception):
    """A run that cannot be reenacted, and why (its rows say so)."""


# --- what the file says each player answered ---------------------------------------------------------
def recorded_value(run: RawRun, round_: int, player: int, move: str) -> Any:
    """The value GAMA-Bench's runner read from `player`'s answer in `round_` (from 1)."""
    record = run.records[round_ - 1]
    if run.base == "battle_royale":
        return record["responses"][0]
    if run.base == "pirate_game":
        position = player - (round_ - 1)
        return record["gold_distribution"] if move == "propose" else record["responses"][position]
    own = run.players[player].get("records") or [] if player < len(run.players) else []
    if len(own) == len(run.records):
        return own[round_ - 1]
    return record["responses"][player]


def recorded_reply(run: RawRun, round_: int, player: int, move: str, answer: RunnerAnswer) -> str:
    """The reply that reads as the recorded value, as the runner's answer format writes it."""
    value = recorded_value(run, round_, player, move)
    if run.base == "battle_royale":
        record = run.records[round_ - 1]
        reply = json.dumps({"action": record.get("action", "shoot"), "target": value})
    elif run.base == "pirate_game" and move == "propose":
        reply = json.dumps({"proposal": _printed_plan(run, round_, player) or {
            f"{seat}-th": gold for seat, gold in enumerate(value, start=round_)}})
    else:
        reply = answer.reply(value)
    if run.condition.startswith("cot"):
        reply = '{"explanation": "", ' + reply[1:]  # as the chain-of-thought format asks: the runner reads from it
    return reply


def _printed_plan(run: RawRun, round_: int, player: int) -> dict[str, Any] | None:
    """The plan as the runner printed it (a Python dict, its keys and value types as the model
    wrote them) in the round's report to the proposer."""
    plan = run.records[round_ - 1]["gold_distribution"]
    for text in _texts(run.players[player].get("prompt") or []):
        for found in re.finditer(r"\{'[^{}]*\}", text):
            try:
                printed = ast.literal_eval(found.group())
            except (ValueError, SyntaxError):
                continue
            if isinstance(printed, dict) and _shares(printed) == list(plan):
                return printed
    return None


def _shares(plan: dict[str, Any]) -> list[int] | None:
    try:
        return [int(gold) for gold in plan.values()]
    except (TypeError, ValueError):
        return None


def _texts(prompt: list[Any]) -> Iterable[str]:
    for message in prompt:
        if isinstance(message, dict):
            content = message.get("content", message.get("parts"))
            for part in content if isinstance(content, list) else [content]:
                if isinstance(part, str):
                    yield part


# --- the backend that answers from the file ----------------------------------------------------------
class FileAnswers:
    """A backend answering each ask with what the file records (`recorded_reply`); for a
    Gemini run, an attempt the runner asked again after gets an empty reply instead."""

    name = "reenact"
    immediate = True

    def __init__(self, run: RawRun) -> None:
        self.run = run
        self.sent: dict[tuple[int, int, str], list[tuple[tuple[str, str], ...]]] = defaultdict(list)
        self.conversations = {index: _turns(player.get("prompt") or []) for index, player in enumerate(run.players)}

    async def complete(self, request: Request) -> Completion:
        ask = request.situation
        player = int(str(ask.player).rsplit("_", 1)[1])
        key = (ask.round, player, ask.move)
        messages = tuple((message.role, message.content) for message in request.messages)
        self.sent[key].append(messages)
        if ask.round > len(self.run.records):
            return Completion(text="")  # a round the file does not have: nothing to answer with
        if ask.fact(STRUCTURE) == "gemini" and self._asked_again(player, messages, ask.prompt):
            return Completion(text="")
        return Completion(text=recorded_reply(self.run, ask.round, player, ask.move, ask.choice))

    def _asked_again(self, player: int, messages: tuple[tuple[str, str], ...], request: str) -> bool:
        """Whether the file's conversation goes on, after what agentsim sent, with the same request again."""
        kept = [part for _, parts in self.conversations.get(player, []) for part in parts]
        sent = [text for _, text in messages]
        return len(kept) > len(sent) and kept[:len(sent)] == sent and kept[len(sent)] == request

    async def aclose(self) -> None:
        return None


def _turns(prompt: list[Any]) -> list[list[Any]]:
    """The file's conversation as [[role, [part, ...]]] (a message is a turn of one part)."""
    turns = []
    for message in prompt:
        if not isinstance(message, dict):
            continue
        role = {"model": "assistant"}.get(str(message.get("role")), str(message.get("role")))
        if "parts" in message:
            parts = message["parts"]
            turns.append([role, [str(part) for part in (parts if isinstance(parts, list) else [] if parts is None
                                                         else [parts])]])
        else:
            turns.append([role, [str(message.get("content", ""))]])
    return turns


# --- playing and comparing ---------------------------------------------------------------------------
def reenact_run(run: RawRun, checkout: Checkout, scenarios: Path, role: int | None = None) -> RunResult:
    scenario = scenario_for(run, checkout, scenarios, role)
    answers = FileAnswers(run)
    engine = as_scenario(scenario)
    assert engine is not None, "a GAMA-Bench game has the layer's engine"
    model: PopulationModel[KitState] = PopulationModel(engine, seed=0, backends=[BackendShare(answers)])

    async def play() -> None:
        while model.running:
            await model.astep()

    asyncio.run(play())
    lines = model.metrics.lines()
    removed = [f"player_{index}" for line in lines for group in line["groups"] for index, _ in group["eliminated"]]
    replies = []
    for line in lines:
        number = int(line["round"])
        for group in line["groups"]:
            for index, move, _kind, action, fell_back in group["moves"]:
                reply = Reply(number, index, move, attempts=len(answers.sent[(number, index, move)]))
                if number > len(run.records):
                    reply.outcome.append("round: agentsim played a round the file does not have")
                    replies.append(reply)
                    continue
                reply.prompt = _compare_prompts(run, scenario, answers, number, index, move)
                reply.choice = _compare_choice(run, number, index, move, action, fell_back)
                reply.outcome = _compare_outcome(run, group, number, index, removed)
                replies.append(reply)
    _compare_last_reports(run, scenario, model, replies)
    if len(lines) < len(run.records):
        note = f"agentsim's game ended after round {len(lines)}, the file's after {len(run.records)}"
        if replies:
            replies[-1].outcome.append("end: " + note)
        return RunResult(run.file, run.game, checkout.revision, replies, note)
    return RunResult(run.file, run.game, checkout.revision, replies, role=role)


def _kept(run: RawRun, player: int) -> list[list[Any]]:
    return _turns(run.players[player].get("prompt") or []) if player < len(run.players) else []


def _drops(scenario: GamaGame[Any], run: RawRun, before: int) -> int:
    """How many messages the runner had dropped before the round `before` (messages structure)."""
    keep = 10 if run.base == "public_goods" else 20
    shift = 1 if run.base == "battle_royale" else 0
    return sum(1 for number in range(1, before) if number + shift > keep)


def _compare_prompts(run: RawRun, scenario: GamaGame[Any], answers: FileAnswers, number: int, player: int,
                     move: str) -> list[str]:
    kept = _kept(run, player)
    differs = []
    for messages in answers.sent[(number, player, move)]:
        if scenario.params.structure == "gemini":
            sent = _regroup(messages)
            whole, last = sent[:-1], sent[-1]
            at = len(whole)
            if kept[:at] != whole or len(kept) <= at or kept[at][0] != last[0] or kept[at][1][:len(last[1])] != last[1]:
                differs.append(_first_difference(whole + [last], kept, "prompt"))
        else:
            system, history = list(messages[0]), [[role, [text]] for role, text in messages[1:-1]]
            total = _drops(scenario, run, len(run.records) + 1)
            visible = history[max(0, total - _drops(scenario, run, number)):]
            if not kept or kept[0] != [system[0], [system[1]]]:
                differs.append("prompt: the system message" + _excerpt(system[1], kept[0][1][0] if kept else ""))
            elif kept[1:1 + len(visible)] != visible:
                differs.append(_first_difference(visible, kept[1:], "prompt"))
    return sorted(set(differs))


def _regroup(messages: Sequence[tuple[str, str]]) -> list[list[Any]]:
    """Messages as the runner's Gemini turns (a run of one role is one turn)."""
    turns: list[list[Any]] = []
    for role, text in messages:
        if turns and turns[-1][0] == role:
            turns[-1][1].append(text)
        else:
            turns.append([role, [text]])
    return turns


def _first_difference(ours: Sequence[list[Any]], theirs: Sequence[list[Any]], kind: str) -> str:
    for position, (mine, kept) in enumerate(zip(ours, theirs)):
        if mine != kept:
            if mine[0] != kept[0]:
                return f"{kind}: message {position + 1} is {mine[0]}'s, the file's {kept[0]}'s"
            for part, (a, b) in enumerate(zip(mine[1], kept[1])):
                if a != b:
                    return f"{kind}: message {position + 1}" + (f", part {part + 1}" if len(mine[1]) > 1 else "") + \
                        _excerpt(a, b)
            return f"{kind}: message {position + 1} has {len(mine[1])} parts, the file's {len(kept[1])}"
    return f"{kind}: {len(ours)} messages, the file keeps {len(theirs)}"


def _excerpt(ours: str, theirs: str) -> str:
    """Where two texts part: a few words of each from there."""
    at = next((index for index, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    start = max(0, at - 20)
    return f" differs: ...{ours[start:at + 40]!r} against ...{theirs[start:at + 40]!r}"


def _normal(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _compare_choice(run: RawRun, number: int, player: int, move: str, action: str, fell_back: bool) -> list[str]:
    if fell_back:
        return ["choice: agentsim could not read the file's answer and played a fallback"]
    recorded = recorded_value(run, number, player, move)
    if run.base == "pirate_game" and move == "propose":
        ours = _shares(json.loads(action))
        return [] if ours == list(recorded) else [f"choice: a plan of {ours}, the file's {recorded}"]
    if str(recorded) != action:
        return [f"choice: {action!r}, the file's {recorded!r}"]
    return []


def _compare_outcome(run: RawRun, group: dict[str, Any], number: int, player: int, removed: list[str]) -> list[str]:
    ours, theirs = dict(group["data"]), dict(run.records[number - 1])
    if "removed_player_info" in theirs:  # an earlier runner's record: the players out by the run's end, in order
        ours["removed_player_info"] = removed
    differs = []
    for key in sorted(set(theirs)):
        if key not in ours:
            differs.append(f"outcome: no {key}")
            continue
        mine, kept = ours[key], theirs[key]
        if key == SHUFFLED.get(run.base):
            mine, kept = sorted(map(_normal, mine)), sorted(map(_normal, kept))
        elif run.base == "battle_royale" and key in ("responses", "shot_player"):
            mine, kept = json.loads(json.dumps(mine, default=str)), kept
            mine, kept = [str(x) for x in mine] if isinstance(mine, list) else str(mine), \
                [str(x) for x in kept] if isinstance(kept, list) else str(kept)
        if mine != kept and not (isinstance(mine, float | int) and isinstance(kept, float | int) and float(mine) == float(kept)):
            differs.append(f"outcome: {key} {_short(mine)}, the file's {_short(kept)}")
    if run.base in UTILITY and player < len(run.players):
        utility = run.players[player].get("utility") or []
        paid = dict(group["payoffs"]).get(player, 0)
        if len(utility) >= number and float(utility[number - 1]) != float(paid):
            differs.append(f"outcome: payoff {paid}, the file's utility {utility[number - 1]}")
    return differs


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _compare_last_reports(run: RawRun, scenario: GamaGame[Any], model: PopulationModel[KitState],
                          replies: list[Reply]) -> None:
    """Each player's conversation at the end (so the last round's report too) against the
    file's, on its last reply."""
    last: dict[int, Reply] = {}
    for reply in replies:
        last[reply.player] = reply
    rounds_in: dict[int, int] = {}
    for number, groups in enumerate(model.metrics.rounds, start=1):
        for group in groups:
            for player in group["players"]:
                rounds_in[player] = number
    total = _drops(scenario, run, len(run.records) + 1)
    for player, reply in last.items():
        turns = [[role, list(parts)] for role, parts in model.state.private.get(player, {}).get(CONVERSATION, [])]
        system = system_of(scenario, player)
        if scenario.params.structure == "gemini":
            ours = gemini_turns(system, None, turns)
        else:
            done = _drops(scenario, run, rounds_in.get(player, 0) + 1)  # agentsim dropped these itself
            ours = [["system", [system]]] + turns[max(0, total - done):]
        kept = _kept(run, player)
        if ours != kept:
            reply.outcome.append(_first_difference(ours, kept, "report").replace("report: ", "report at the end: ", 1))


# --- the command -------------------------------------------------------------------------------------
def reenact(directory: Path, templates: Path, out: Path, scenarios: Path = SCENARIOS,
            revisions: bool = True) -> list[RunResult]:
    checkout = Checkout(templates)
    runs = imported_runs(directory)
    results = []
    for run in runs:
        results.append(best(run, checkout, scenarios, revisions))
    write_csv(out, results)
    return results


def best(run: RawRun, checkout: Checkout, scenarios: Path, revisions: bool) -> RunResult:
    """The run reenacted with the checkout's texts, else with the earlier version of them that
    reproduces it best."""
    try:
        found = reenact_run(run, checkout, scenarios)
    except UserError as error:
        found = RunResult(run.file, run.game, "", [], f"not reenacted: {error}")
    except (KeyError, IndexError, TypeError, ValueError) as error:  # a file in no shape agentsim's game can follow
        found = RunResult(run.file, run.game, "", [], f"not reenacted: {type(error).__name__}: {error}")
    if found.replies and found.equal == len(found.replies):
        return found
    versions = [checkout.at(revision) for revision in _revisions(checkout, run)] if revisions else []
    roles: list[int | None] = [None] if (run.condition or "").startswith("role") else [None, 1, 2, 3]
    for role in roles:
        for version in [checkout, *versions]:
            if (version, role) == (checkout, None):
                continue  # tried first
            try:
                if not _same_description(run, version, scenarios, role):
                    continue  # every reply's prompt opens with it: this version cannot reproduce more
                candidate = reenact_run(run, version, scenarios, role)
            except (UserError, KeyError, IndexError, TypeError, ValueError):
                continue
            if candidate.equal > found.equal:
                found = candidate
                if found.equal == len(found.replies):
                    return found
    if found.replies and not any(_same_description(run, version, scenarios, role) for role in roles
                                 for version in [checkout, *versions]):
        found.unplayable = True
        found.note = "no version of the checkout's texts writes its description"
    return found


def _same_description(run: RawRun, checkout: Checkout, scenarios: Path, role: int | None = None) -> bool:
    """Whether the checkout's description for the run's first player is the one its file keeps."""
    kept = _kept(run, 0)
    try:
        written = system_of(scenario_for(run, checkout, scenarios, role), 0)
    except (UserError, KeyError, IndexError, TypeError, ValueError):
        return False
    return bool(kept) and bool(kept[0][1]) and written == kept[0][1][0]


_DISTINCT: dict[tuple[str, str], list[str]] = {}


def _revisions(checkout: Checkout, run: RawRun) -> list[str]:
    """The checkout's earlier commits with distinct texts for the run's game, newest first."""
    key = (str(checkout.root), run.base)
    if key not in _DISTINCT:
        paths = [f"{checkout.templates.name}/{run.base}", f"games/{run.base}.py", "server.py"]
        seen, distinct = set(), []
        for revision in checkout.revisions(*paths):
            signature = checkout.signature(revision, paths)
            if signature and signature not in seen:
                seen.add(signature)
                distinct.append(revision)
        _DISTINCT[key] = distinct
    return _DISTINCT[key]


def write_csv(out: Path, results: list[RunResult]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "reenact.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for result in results:
            if not result.replies:
                writer.writerow([result.file, result.game, result.revision, "", "", "", 0, "", "", "", "", result.note])
            for reply in result.replies:
                differs = "; ".join(reply.prompt + reply.choice + reply.outcome)
                if result.unplayable:
                    differs = f"({result.note}) {differs}"
                writer.writerow([result.file, result.game, result.revision[:12], reply.round, f"player_{reply.player}",
                                 reply.move, reply.attempts, int(not reply.prompt), int(not reply.choice),
                                 int(not reply.outcome), result.role or "", differs])
    return path


def summary(results: list[RunResult]) -> list[str]:
    """The shares equal, overall and per game, and each kind of difference."""
    lines = []
    by_game: dict[str, list[Reply]] = defaultdict(list)
    for result in results:
        if not result.unplayable:
            by_game[result.game].extend(result.replies)
    everything = [reply for replies in by_game.values() for reply in replies]

    def shares(replies: list[Reply]) -> str:
        if not replies:
            return "no replies"
        count = len(replies)
        return (f"{count} replies: prompts {_share(sum(not r.prompt for r in replies), count)}, readings "
                f"{_share(sum(not r.choice for r in replies), count)}, outcomes {_share(sum(not r.outcome for r in replies), count)}, "
                f"all three {_share(sum(not (r.prompt or r.choice or r.outcome) for r in replies), count)}")

    unplayable = [result for result in results if result.unplayable]
    lines.append(f"{len(results) - len(unplayable)} runs, " + shares(everything))
    for game in sorted(by_game):
        lines.append(f"  {game}: " + shares(by_game[game]))
    kinds = Counter(_kind(text) for reply in everything for text in reply.prompt + reply.choice + reply.outcome)
    if kinds:
        lines.append("differences, by kind:")
        lines.extend(f"  {count:6d}  {kind}" for kind, count in kinds.most_common())
    revised = Counter(result.revision[:12] for result in results if result.revision)
    if revised:
        lines.append("runs played with an earlier version of the checkout's texts: " +
                     ", ".join(f"{revision} {count}" for revision, count in revised.most_common()))
    roles = Counter(result.role for result in results if result.role)
    if roles:
        lines.append("runs whose description shows a role prompt their name does not: " +
                     ", ".join(f"role {role} {count}" for role, count in sorted(roles.items())))
    if unplayable:
        lines.append(f"{len(unplayable)} runs ({sum(len(result.replies) for result in unplayable)} replies) left out: no "
                     f"version of the checkout's texts writes their description:")
        lines.extend(f"  {result.file}" for result in unplayable)
    unplayed = [result for result in results if not result.replies]
    lines.extend(f"  not reenacted: {result.file}: {result.note}" for result in unplayed)
    return lines


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.2%})" if whole else "0/0"


def _kind(text: str) -> str:
    """A difference's kind: its text up to the first value."""
    return re.split(r" differs:| \d| '|, the file's| \[|: \{| \"", text, maxsplit=1)[0]

