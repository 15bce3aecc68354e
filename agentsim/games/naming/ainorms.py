"""The AI-norms runs (Flint Ashery et al. 2025: Llama-2/3/3.1-70B, Claude 3.5 Sonnet) as
agentsim experiments, so that agentsim's own analyses and `report` read them beside a user's
runs: convergence (Fig. 1), individual and collective bias (Fig. 2, Table S1, S2), stability (Fig. S7), the production of
the alternative and the critical mass (Fig. 3, Table S3), strategies by memory (Fig. S9, S10).

Each published pickle (ainorms_files.py reads it as plain data) becomes one results directory
holding the tables a naming-game run writes. A run is replayed through the naming game's own
codec and `ConventionMetrics`: every agent's memory is rebuilt from the interactions in order
(and checked against the agent's history the pickle keeps), every decision stored with the
memory it was taken from, and the per-round tallies, consensus and flip measured as for a run
of agentsim's. What the data lack is said in the experiment's `imported` record: the replies'
text (each move is stored as the answer the paper's reader took from it) and the order the
options were listed in (shuffled per prompt, not kept: contexts list the pool in its order).

Rounds are agentsim's, N/2 interactions (each agent plays once on average); the paper's
figures bin N interactions per population round, so the paper's round r is agentsim's 2r.

Layout under the output directory, per model (the paper's file shorthand):

    MODEL/baseline_NAMES_N24_H5/                 free runs from empty memories (Fig. 1, 2)
    MODEL/critical_mass_N24_H5/Q_to_M/committed_010/   C agents committed to M against Q
    MODEL/critical_mass_N24_H5/Q_to_M/committed_000/   Q left alone (an evolved population, Fig. S7)
    MODEL/critical_mass_N24_H5/analysis/critical_mass.json   the critical mass each way
    MODEL/individual_bias_QM_H0/                 a bias test's first choices (Table S1, Fig. S5)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ...analysis.recorded import RecordedExperiment, save_artifact
from ...analysis.stats import BiasTest
from ...errors import OutputDirError, UserError
from ...params import require
from ...records import EncounterRecord, Move
from ...staging import path_name, refuse_occupied, staged
from ...store import Recorder, Store
from .ainorms_files import Condition, SourceFile, condition, load_plain, source_files
from .bias import individual_bias
from .critical_mass import ARTIFACT as CRITICAL_MASS
from .critical_mass import PAPER_ROUND, CriticalMass, paper_flips, smallest_from_which
from .game import NamingGame, NamingParams
from .metrics import ConventionMetrics
from .probes import FirstChoiceProbe, StrategyProbe, StrategyProbeParams
from .situation import NamingSituation
from .standin import NamingStandInSettings

if TYPE_CHECKING:
    from ...model import PopulationModel

SOURCE = "AI-norms (Flint Ashery, Aiello and Baronchelli 2025), https://github.com/Ariel-Flint-Ashery/AI-norms"

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class ImportSettings:
    """How the critical mass is read from the imported committed-minority runs: a size flips
    when at least `required_share` of its runs flip within `max_rounds` agentsim rounds (60:
    the paper's 30 population rounds of N interactions)."""

    max_rounds: int = 30 * PAPER_ROUND
    required_share: float = 1.0

    def __post_init__(self) -> None:
        require(self.max_rounds >= 1, f"max_rounds must be at least 1 (got {self.max_rounds})")
        require(0 < self.required_share <= 1, f"required_share must be in (0, 1] (got {self.required_share})")


@dataclass
class Imported:
    """One file's runs as recorded: where, what condition, how many runs (and empty ones skipped)."""

    where: str
    directory: Path
    condition: Condition
    runs: int
    empty: int
    summaries: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ImportResult:
    imported: list[Imported] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files holding no population's runs
    critical_masses: list[ImportedCriticalMass] = field(default_factory=list)


def import_source(source: Path, out: Path, settings: ImportSettings | None = None, *,
                  progress: Progress | None = None) -> ImportResult:
    """Every population's runs under `source` (a zip, a pickle, or a directory of them)
    recorded into a new results directory `out`, then the critical mass of each model and
    condition: written whole or not at all (agentsim/staging.py: a refused file, an error or a
    signal leaves `out` as it was)."""
    settings = settings or ImportSettings()
    refuse_occupied(out)
    said: list[tuple[str, tuple[Path, ...]]] = []  # (said once the import is in place: a refusal leaves no path)
    with staged(out) as folder:
        result = _import_into(source, folder, settings, lambda line, *paths: said.append((line, paths)))
    for line, paths in said:
        (progress or (lambda line: None))(line.format(*(out / path.relative_to(folder) for path in paths)))
    for entry in result.imported:
        entry.directory = out / entry.directory.relative_to(folder)
    return result


def _import_into(source: Path, out: Path, settings: ImportSettings, say: Callable[..., None]) -> ImportResult:
    """`import_source`'s work, into the folder `out` (a line `say` shows names its paths as `{}`)."""
    result = ImportResult()
    strategy_tests: dict[str, list[tuple[SourceFile, Condition]]] = {}
    for file in source_files(source):
        found = condition(file.name)
        if found is None:
            result.skipped.append(file.where)
            continue
        if found.kind == "strategy":  # one memory state each: a model's go into one experiment
            strategy_tests.setdefault(found.shorthand, []).append((file, found))
            continue
        imported = import_file(file, found, out)
        result.imported.append(imported)
        say(f"{file.name}: {imported.runs} runs -> {{}}" + (f" ({imported.empty} empty runs left out)" if imported.empty
                                                              else ""), imported.directory)
    for tests in strategy_tests.values():
        imported = import_strategy_tests(tests, out)
        result.imported.append(imported)
        say(f"{len(tests)} strategy tests of {imported.condition.model}: one run per memory state -> {{}}",
            imported.directory)
    if not result.imported:
        raise UserError(f"no population's runs under '{source}' (files named *_converged_baseline_*, *_evolved_from_*, "
                        f"*_swap_*cmtd_*, *_bias_test_*); give the AI-norms repository's data/*.zip")
    result.critical_masses = critical_masses(result.imported, out, settings)
    return result


def experiment_directory(out: Path, found: Condition) -> Path:
    """Where a file's runs go: under `out`, in names made from its conditions, each made a safe
    path component (agentsim/staging.py), never a path a file gives."""
    where = out / path_name(found.shorthand)
    if found.kind == "bias":
        return where / path_name(f"individual_bias_{''.join(found.names)}_H{found.memory_length}")
    if found.kind == "strategy":
        return where / path_name(f"strategies_{''.join(found.names)}")
    size = f"N{found.agents}_H{found.memory_length}"
    if found.kind == "baseline" or found.majority is None or found.alternative is None:
        suffix = f"_{found.interactions}ints" if found.interactions else ""
        label = "baseline" if found.kind == "baseline" else f"evolved_from_{found.majority}"
        return where / path_name(f"{label}_{'_'.join(found.names)}_{size}{suffix}")
    return (where / f"critical_mass_{size}" / path_name(f"{found.majority}_to_{found.alternative}")
            / f"committed_{found.committed:03d}")


def scenario_for(found: Condition, rounds: int) -> NamingGame:
    """The naming game the paper's runs played (its pool, N, H, payoffs and sampling; the
    committed agents say the other name of the pool)."""
    starts = found.majority is not None
    params = NamingParams(names=found.names, agents=found.agents, memory_length=found.memory_length,
                          success_payoff=found.success_payoff, failure_payoff=found.failure_payoff,
                          temperature=found.temperature, top_k=10, max_tokens=6, max_rounds=max(1, rounds),
                          committed=found.committed, majority_name=found.majority,
                          committed_name=found.alternative if starts else None,
                          stop_at="consensus" if not starts else "none")
    return NamingGame(params, standin=NamingStandInSettings()).for_experiment(0)


def _new_directory(out: Path, found: Condition, file: SourceFile) -> Path:
    directory = experiment_directory(out, found)
    if Store.exists(directory):
        raise OutputDirError(f"{directory.relative_to(out)} would hold two files' runs ({file.name} is the condition of "
                             f"another file of the source); import them into separate --out DIRs")
    return directory


def _imported(file: SourceFile, found: Condition, **more: Any) -> dict[str, Any]:
    """The experiment's `imported` record: where the runs came from and what the data lack."""
    return {"from": SOURCE, "source": file.where, "sha256": hashlib.sha256(file.data).hexdigest(),
            "model": found.model, "shorthand": found.shorthand, "condition": found.kind,
            "replies": "not in the data: each move is the answer the paper's reader took",
            "option_order": "not in the data (shuffled per prompt): contexts list the pool in its order", **more}


def import_file(file: SourceFile, found: Condition, out: Path) -> Imported:
    data = load_plain(file.data, file.where)
    if found.kind == "bias":
        return import_bias_test(file, found, data, out)
    runs = _runs(data, file.where)
    directory = _new_directory(out, found, file)
    round_size = max(1, found.agents // 2)
    longest = max((len(run["tracker"]["outcome"]) for _, run in runs), default=0)
    game = scenario_for(found, math.ceil(longest / round_size))
    kept = [(key, run) for key, run in runs if run["tracker"]["outcome"]]
    replays = [_replay(game, found, key, run, f"{file.where}, run {key}") for key, run in kept]
    label = f"{found.model} (AI-norms data)"
    store = Store(directory)
    try:
        store.set_experiment({
            "scenario": game.name, "scenario_class": game.describe()["class"], "params": game.params.as_dict(),
            "standin": game.standin.as_dict(), "seed": 0, "backend": label, "runs": len(replays), "prompt_templates": {},
            "imported": _imported(file, found, network=found.network, paper_runs=[str(key) for key, _ in runs],
                                  empty_runs_left_out=len(runs) - len(kept),
                                  system_prompt=data.get("rules") if isinstance(data.get("rules"), str) else None),
        })
        summaries = []
        for number, replay in enumerate(replays):
            summaries.append(replay.record(store, number, label, game))
    finally:
        store.close()
    return Imported(file.where, directory, found, len(replays), len(runs) - len(kept), summaries)


def import_bias_test(file: SourceFile, found: Condition, data: Any, out: Path) -> Imported:
    """A bias test (one player asked from an empty memory, again and again) as a
    `FirstChoiceProbe` run."""
    tracker = data.get("tracker") if isinstance(data, dict) else None
    answers = tracker.get("answers") if isinstance(tracker, dict) else None
    if not isinstance(answers, list) or not all(type(answer) is str and answer in found.names for answer in answers):
        raise UserError(f"{file.where}: not in the AI-norms format (a bias test's tracker holds its answers, names "
                        f"of the pool {', '.join(found.names)})")
    game = FirstChoiceProbe(NamingParams(names=found.names, agents=2, memory_length=found.memory_length,
                                         success_payoff=found.success_payoff, failure_payoff=found.failure_payoff,
                                         temperature=found.temperature, top_k=10, max_tokens=6,
                                         max_rounds=max(1, len(answers) // 2))).for_experiment(0)
    directory = _new_directory(out, found, file)
    summaries = _write_answers(directory, game, found, [((), answers)], _imported(file, found,
                                                                               answers_left_out=len(answers) % 2))
    return Imported(file.where, directory, found, 1, 0, summaries)


def import_strategy_tests(tests: list[tuple[SourceFile, Condition]], out: Path) -> Imported:
    """A model's strategy tests (each a player asked again and again from one memory: its own
    and its partners' names, oldest first) as one `StrategyProbe` experiment, a run per
    memory state, so that `strategies` and `report` give Table 1 from them."""
    found = tests[0][1]
    states = []
    for file, _ in sorted(tests, key=lambda test: (test[1].memory_length, test[0].name)):
        data = load_plain(file.data, file.where)
        player = data.get("simulation") if isinstance(data, dict) else None
        tracker = data.get("tracker") if isinstance(data, dict) else None
        answers = tracker.get("answers") if isinstance(tracker, dict) else None
        own = player.get("my_history") if isinstance(player, dict) else None
        partner = player.get("partner_history") if isinstance(player, dict) else None
        pool = found.names
        if not (isinstance(answers, list) and isinstance(own, list) and isinstance(partner, list)
                and len(own) == len(partner) and all(type(name) is str and name in pool for name in [*answers, *own, *partner])):
            raise UserError(f"{file.where}: not in the AI-norms format (a strategy test holds one player's history and "
                            f"its answers, names of the pool {', '.join(pool)})")
        memory = tuple((mine, theirs, found.success_payoff if mine == theirs else found.failure_payoff)
                       for mine, theirs in zip(own, partner))
        states.append((memory, answers))
    longest = max(len(memory) for memory, _ in states)
    probe = StrategyProbe(StrategyProbeParams(names=found.names, agents=2, memory_length=longest,
                                             probe_lengths=tuple(sorted({len(memory) for memory, _ in states})),
                                             success_payoff=found.success_payoff, failure_payoff=found.failure_payoff,
                                             temperature=found.temperature, top_k=10, max_tokens=6,
                                             max_rounds=max(1, max(len(answers) for _, answers in states) // 2)))
    game = probe.for_experiment(0)
    directory = _new_directory(out, found, tests[0][0])
    record = _imported(tests[0][0], found, source=[file.where for file, _ in tests],
                       sha256=[hashlib.sha256(file.data).hexdigest() for file, _ in tests])
    summaries = _write_answers(directory, game, found, states, record)
    return Imported(", ".join(file.where for file, _ in tests), directory, found, len(states), 0, summaries)


def _write_answers(directory: Path, game: NamingGame, found: Condition,
                   states: list[tuple[tuple[tuple[str, str, int], ...], list[str]]], record: dict[str, Any]) -> list[dict[str, Any]]:
    """Tests that asked one player again and again from one memory, a run per memory: the
    answers in pairs, as two agents who never remember (their payoffs are the probe's, not the
    paper's: a test had no partner; an odd last answer is left out)."""

    label = f"{found.model} (AI-norms data)"
    store = Store(directory)
    summaries = []
    try:
        store.set_experiment({"scenario": game.name, "scenario_class": game.describe()["class"],
                              "params": game.params.as_dict(), "standin": game.standin.as_dict(), "seed": 0,
                              "backend": label, "runs": len(states), "prompt_templates": {}, "imported": record})
        for run, (memory, answers) in enumerate(states):
            store.begin_run(run, replicate=run, seed=0, backend=label,
                            agents=[(0, "llm", found.model), (1, "llm", found.model)])
            context = game.codec.encode(NamingSituation(game.names, memory))
            recorder = Recorder(run)
            for t in range(len(answers) // 2):
                first, second = answers[2 * t], answers[2 * t + 1]
                recorder.encounters.append((run, t, t, int(first == second)))
                for agent, own, other in ((0, first, second), (1, second, first)):
                    recorder.answered.append((run, t, agent, 0, own, game.payoff(own, other), own, context,
                                              None, None, None, None))
            store.commit(recorder, b"", len(answers) // 2)
            store.connection.execute("DELETE FROM checkpoints WHERE run = ?", (run,))  # nothing to resume
            summary = {"run": run, "seed": 0, "replicate": run, "backend": label, "status": "done",
                       "stop_reason": "end of the paper's test", "interactions": len(answers) // 2, "imported": True}
            store.set_status(run, "done", stop_reason="end of the paper's test", summary=summary)
            summaries.append(summary)
    finally:
        store.close()
    return summaries


def _runs(data: Any, where: str) -> list[tuple[Any, dict[str, Any]]]:
    """The runs of a file (run number -> run; a 'rules' prompt beside them), checked for the
    parts the replay reads."""
    if not isinstance(data, dict):
        raise UserError(f"{where}: not in the AI-norms format (a dict of runs); is it one of data/*.zip's pickles?")
    runs = [(key, run) for key, run in data.items() if key != "rules"]
    for key, run in runs:
        what = f"{where}, run {key}"
        if not isinstance(run, dict) or not isinstance(run.get("simulation"), dict) or not isinstance(run.get("tracker"), dict):
            raise UserError(f"{what}: not in the AI-norms format (a run holds 'simulation' and 'tracker')")
        tracker = run["tracker"]
        columns = [tracker.get(column) for column in ("players", "answers", "outcome")]
        if not all(isinstance(column, list) for column in columns) or len({len(column) for column in columns}) != 1:
            raise UserError(f"{what}: not in the AI-norms format (the tracker's players, answers and outcome are lists "
                            f"of one length)")
        if not all(type(player) is int for player in run["simulation"]):
            raise UserError(f"{what}: not in the AI-norms format (players are numbered)")
        for player in run["simulation"].values():
            if not isinstance(player, dict) or not isinstance(player.get("my_history"), list) \
                    or not isinstance(player.get("partner_history"), list):
                raise UserError(f"{what}: not in the AI-norms format (a player holds my_history and partner_history)")
    return runs


@dataclass
class _Replay:
    """One run replayed: the agents, each encounter as the store records it, and the metrics."""

    agents: list[tuple[int, str, str]]
    records: list[tuple[EncounterRecord, dict[int, str]]]  # each encounter, and its LLM agents' contexts
    metrics: ConventionMetrics
    paper_curve: list[float]  # the alternative's share of the others' plays per N interactions (the paper's rounds)

    def record(self, store: Store, number: int, label: str, game: NamingGame) -> dict[str, Any]:

        store.begin_run(number, replicate=number, seed=0, backend=label, agents=self.agents)
        recorder = Recorder(number)
        for record, contexts in self.records:
            recorder.encounters.append((number, record.t, record.round, record.outcome))
            for move in record.moves:
                context = contexts.get(move.agent)
                if context is None:  # a committed agent's play: a move without a call
                    recorder.bare.append((number, record.t, move.agent, 0, move.action, move.payoff))
                    continue
                # no reply text in the data: the move stands as the answer the paper's reader took
                recorder.answered.append((number, record.t, move.agent, 0, move.action, move.payoff, move.action,
                                          context, None, None, None, None))
        for round_, stats in self.metrics.pop_rounds(1 << 62):
            recorder.add_round(round_, stats.as_dict())
        store.commit(recorder, b"", len(self.records))
        store.connection.execute("DELETE FROM checkpoints WHERE run = ?", (number,))  # nothing to resume
        rounds = self.records[-1][0].round + 1 if self.records else 0
        summary = {"run": number, "seed": 0, "replicate": number, "backend": label, "status": "done",
                   "stop_reason": "end of the paper's run", "rounds": rounds, "interactions": len(self.records),
                   "imported": True, "paper_round_alternative_share": [round(share, 6) for share in self.paper_curve],
                   # the naming readout's run_summary reads the run's metrics only
                   **game.readout().run_summary(cast("PopulationModel[None]", _Measured(self.metrics)))}
        store.set_status(number, "done", stop_reason="end of the paper's run", summary=summary)
        return summary


@dataclass
class _Measured:
    metrics: ConventionMetrics


def _replay(game: NamingGame, found: Condition, key: Any, run: dict[str, Any], where: str) -> _Replay:
    simulation = run["simulation"]
    players = sorted(simulation)
    index = {player: position for position, player in enumerate(players)}
    committed = frozenset(index[player] for player in players if simulation[player].get("committed_tag") is True)
    if len(players) != found.agents or len(committed) != found.committed:
        raise UserError(f"{where}: {len(players)} players, {len(committed)} committed, where the file name says "
                        f"{found.agents} and {found.committed}; not an AI-norms file as published")
    names, memory_length = game.names, found.memory_length
    alternative = found.alternative
    start = [(found.majority, found.majority, found.success_payoff)] * memory_length if found.majority else []
    memories: dict[int, list[tuple[str, str, int]]] = {agent: list(start) for agent in range(len(players))}
    size = len(players)
    metrics = ConventionMetrics(population=size, committed=committed, alternative=alternative,
                                success_window=size, consensus_window=3 * size, threshold=game.params.consensus_threshold)
    round_size = max(1, size // 2)
    tracker = run["tracker"]
    records = []
    for t, (pair, answers) in enumerate(zip(tracker["players"], tracker["answers"])):
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(player) is int and player in index for player in pair)
                and isinstance(answers, list) and len(answers) == 2 and all(answer in names for answer in answers)):
            raise UserError(f"{where}: interaction {t} is not two players and two names of the pool "
                            f"({', '.join(names)}); not an AI-norms file as published")
        agents = (index[pair[0]], index[pair[1]])
        first, second = answers
        payoffs = (game.payoff(first, second), game.payoff(second, first))
        contexts = {agent: game.codec.encode(NamingSituation(names, tuple(memories[agent][-memory_length:])
                                                             if memory_length else ()))
                    for agent in agents if agent not in committed}
        record = EncounterRecord(t, t // round_size, int(first == second),
                                 [Move(agents[0], first, payoffs[0], False), Move(agents[1], second, payoffs[1], False)], [])
        memories[agents[0]].append((first, second, payoffs[0]))
        memories[agents[1]].append((second, first, payoffs[1]))
        metrics.update(record)
        records.append((record, contexts))
    _check_histories(simulation, players, memories, where)
    curve = paper_curve([record for record, _ in records], committed, alternative, size) if alternative else []
    described = [(position, "committed" if position in committed else "llm",
                  f"committed:{alternative}" if position in committed else found.model) for position in range(size)]
    return _Replay(described, records, metrics, curve)


def paper_curve(records: list[EncounterRecord], committed: frozenset[int], alternative: str, agents: int) -> list[float]:
    """The alternative's share of the non-committed agents' plays in each bin of N
    interactions: Fig. 3A's points as the paper's plotter bins them."""
    curve = []
    for start in range(0, len(records), agents):
        plays = [move.action for record in records[start:start + agents] for move in record.moves if move.agent not in committed]
        curve.append(plays.count(alternative) / len(plays) if plays else 0.0)
    return curve


def _check_histories(simulation: dict[Any, Any], players: list[Any], memories: dict[int, list[tuple[str, str, int]]],
                     where: str) -> None:
    """Each player's history in the pickle is the one the replay rebuilt (the start's H
    entries, then its interactions in order): the replay saw what the agents saw."""
    for position, player in enumerate(players):
        own = [entry[0] for entry in memories[position]]
        partner = [entry[1] for entry in memories[position]]
        recorded = simulation[player]
        if recorded["my_history"] != own or recorded["partner_history"] != partner:
            raise UserError(f"{where}: player {player}'s recorded history is not its interactions in the tracker; "
                            f"not an AI-norms file as published")


def first_choice_tests(result: ImportResult) -> list[tuple[Imported, BiasTest]]:
    """agentsim's individual-bias test of each imported bias test alone (`report` pools a
    model's bias test with its runs' first decisions, which share its backend and pool)."""
    tests: list[tuple[Imported, BiasTest]] = []
    for entry in result.imported:
        if entry.condition.kind != "bias":
            continue
        experiment = RecordedExperiment(entry.directory)
        try:
            tests.extend((entry, test) for test in individual_bias([experiment]).values())
        finally:
            experiment.close()
    return tests


# --- the critical mass of the imported committed-minority runs ----------------------------------------
@dataclass
class ImportedCriticalMass:
    """The critical mass against one convention by agentsim's rule (`result`: every run, or
    `required_share` of them, flips within `max_rounds`) and by the paper's (`paper`: the
    mean curve flips, `paper_flips`), for one model and condition (`group`)."""

    group: str
    result: CriticalMass
    paper: int | None


def critical_masses(imported: Iterable[Imported], out: Path, settings: ImportSettings) -> list[ImportedCriticalMass]:
    """For each model, condition (N, H) and convention: the smallest committed size that
    flips with every larger size tried flipping too (the data try a few sizes, not a
    bisection's); size 0 is a population left alone (an evolved file). Saved where `report`
    finds it, the paper's criterion beside agentsim's."""
    groups: dict[tuple[str, Path], dict[tuple[str, str], dict[int, Imported]]] = {}
    for entry in imported:
        named = entry.condition
        root = entry.directory.parent.parent
        if named.majority is None or named.alternative is None or not root.name.startswith("critical_mass_"):
            continue
        groups.setdefault((named.model, root), {}).setdefault((named.majority, named.alternative), {})[named.committed] = entry
    results: list[ImportedCriticalMass] = []
    for (model, root), pairs in sorted(groups.items(), key=lambda item: (item[0][0], str(item[0][1]))):
        found_here = []
        for (majority, alternative), sizes in sorted(pairs.items()):
            if not any(sizes):  # a population left alone, no minority tried: a stability run (Fig. S7)
                continue
            agents = next(iter(sizes.values())).condition.agents
            result = CriticalMass(majority, alternative, agents, max(entry.runs for entry in sizes.values()),
                                  settings.required_share, settings.max_rounds, None)
            paper_verdicts = {}
            for size, entry in sorted(sizes.items()):
                flips = [summary for summary in entry.summaries if summary.get("flip")
                         and summary.get("flip_round") is not None and summary["flip_round"] < settings.max_rounds]
                paper_verdicts[size] = paper_flips([summary["paper_round_alternative_share"] for summary in entry.summaries],
                                                   settings.max_rounds // PAPER_ROUND)
                result.tried[size] = {"runs": entry.runs, "flips": len(flips),
                                      "share": len(flips) / entry.runs if entry.runs else 0.0,
                                      "flip_rounds": [summary["flip_round"] for summary in flips],
                                      "paper_criterion_flips": paper_verdicts[size],
                                      "directory": entry.directory.relative_to(root).as_posix()}
            result.critical_mass = smallest_from_which(
                {size: tried["share"] >= settings.required_share for size, tried in result.tried.items()})
            found_here.append(ImportedCriticalMass(
                f"{model}, N={agents}, H={next(iter(sizes.values())).condition.memory_length}", result,
                smallest_from_which(paper_verdicts)))
        if found_here:
            save_artifact(root, CRITICAL_MASS, {
                "backend": f"{model} (AI-norms data)", "imported": SOURCE,
                "results": [entry.result.as_dict() | {"paper_criterion_critical_mass": entry.paper} for entry in found_here]})
        results.extend(found_here)
    return results
