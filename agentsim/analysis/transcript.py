"""`python -m agentsim transcript DIR [--run N] [--agent A] [--round R]`: a run's prompts and
replies, call by call, as the model saw them.

The store keeps each call's compact context, not its prompt; the prompt is rebuilt with the
`rebuild_messages` of the scenario's prompt codec (the scenario rebuilt from the recorded class, imported from
an installed package or a scenario file the user names with `--scenario`, never one the
directory names, and the recorded parameters, each run with its VARIANTS cell's) and the prompt template text stored with the
experiment, so a template file edited since the run does not change what is printed. Any
scenario with a prompt codec gets a transcript: the naming game, SIGN, and
games added later. Each call is headed by its run, population round (for a game played in
rounds, its month or generation), encounter time `t`, agent and model.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from ..errors import UserError
from ..llm.base import Message
from ..scenario import Scenario
from .recorded import RecordedExperiment, find_experiments


@dataclass(frozen=True)
class Call:
    """One recorded policy call and what came of it."""

    run: int
    round: int | None
    t: int
    agent: int
    model: str
    attempt: int
    reply: str | None
    parsed: str | None
    error: str | None
    action: str | None
    payoff: float | None
    new_messages: tuple[Message, ...]  # what this attempt added to the conversation
    fallback: bool = False  # the move no reply gave: drawn by the codec's fallback rule
    first: bool = False  # the first call of a decision (an agent asked again in an encounter has several)


class Rows(Protocol):
    """What `calls` reads of a store: its runs and its rows (a `Store`, or `watch`'s read-only
    connection)."""

    def runs(self) -> list[dict[str, Any]]: ...

    def rows(self, sql: str, parameters: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]: ...


class Recorded(Protocol):
    """What `calls` reads of an experiment (a `RecordedExperiment`): its store and its cell."""

    @property
    def store(self) -> Rows: ...

    @property
    def variant(self) -> int | None: ...

    @property
    def variants(self) -> int: ...


def rebuilding_scenario(experiment: RecordedExperiment, templates_dir: Path) -> Scenario[Any, Any, Any]:
    """The scenario that ran (this cell of its grid), reading its prompt template from the
    text stored with the experiment rather than from today's file."""
    scenario = experiment.scenario
    if scenario is None:
        raise UserError(experiment.unresolved or f"'{experiment.directory}' records no scenario class; its prompts "
                        "cannot be rebuilt")
    if scenario.codec is None:
        raise UserError(f"scenario '{experiment.scenario_name}' has no prompt codec, so its prompts cannot be "
                        "rebuilt; give it one (docs/writing-a-game.md)")
    stored: dict[str, str] = experiment.experiment.get("prompt_templates") or {}
    template = getattr(scenario, "template", None)
    text = stored.get(getattr(template, "name", ""))
    if template is not None and text is not None and text != template.text and "prompt" in experiment.params:
        templates_dir.mkdir(parents=True, exist_ok=True)
        path = templates_dir / f"{template.name}.txt"
        path.write_text(text, encoding="utf-8")
        scenario = scenario.with_params(prompt=str(path)).for_experiment(int(experiment.experiment.get("seed", 0)))
    return scenario


def _cell_runs(experiment: Recorded) -> dict[int, int]:
    """Every run of this cell of the grid (finished or not) and its seed."""
    return {row["run"]: row["seed"] for row in experiment.store.runs()
            if experiment.variant is None or row["replicate"] % experiment.variants == experiment.variant}


def calls(experiment: Recorded, scenario: Scenario[Any, Any, Any], *, run: int | None = None, agent: int | None = None,
          round_: int | None = None) -> Iterator[Call]:
    """The experiment's recorded calls in order (run, t, then the order the encounter's
    decisions were asked: a layer game's steps, else by agent; a decision's attempts in turn),
    with their messages."""
    runs = _cell_runs(experiment)
    if run is not None:
        runs = {key: value for key, value in runs.items() if key == run}
    codec = scenario.codec
    if not runs or codec is None:
        return
    filters, parameters = [f"d.run IN ({','.join('?' * len(runs))})"], list(runs)
    if agent is not None:
        filters.append("d.agent = ?")
        parameters.append(agent)
    # The round as the game numbers it (a game on the layer counts from 1, as its prompts do;
    # the store's population rounds count from 0): `Scenario.round_base`, 0 where none is set.
    base = int(getattr(scenario, "round_base", 0))
    if round_ is not None:
        filters.append("e.round = ?")
        parameters.append(round_ - base)
    rows = experiment.store.rows(
        "SELECT d.run, e.round, d.t, d.agent, a.model, d.attempt, d.context, d.reply, d.parsed, d.error, d.action, d.payoff, "
        "d.fallback IS 1 "
        "FROM decisions d LEFT JOIN encounters e ON e.run = d.run AND e.t = d.t "
        "LEFT JOIN agents a ON a.run = d.run AND a.agent = d.agent "
        f"WHERE (d.reply IS NOT NULL OR d.context IS NOT NULL) AND {' AND '.join(filters)} "
        "ORDER BY d.run, d.t, d.agent, d.attempt", tuple(parameters))
    for decisions in _encounters(rows):
        for decision in _in_the_order_made(decisions, codec):
            yield from _decision_calls(decision, codec, base)


Row = tuple[Any, ...]


def _encounters(rows: Iterator[Row]) -> Iterator[list[list[Row]]]:
    """The rows of each encounter (run, t), as its decisions: each begins at its row with a
    context (a decision's first attempt; a player asked again in the encounter continues its
    count of attempts from there)."""
    key: tuple[int, int] | None = None
    decisions: list[list[Row]] = []
    for row in rows:
        if (row[0], row[2]) != key:
            if decisions:
                yield decisions
            key, decisions = (row[0], row[2]), []
        if row[5] == 0 or row[6] or not decisions or row[3] != decisions[-1][0][3]:
            decisions.append([row])
        else:
            decisions[-1].append(row)
    if decisions:
        yield decisions


def _in_the_order_made(decisions: list[list[Row]], codec: Any) -> list[list[Row]]:
    """An encounter's decisions in the order they were asked, where its situations number
    them (a layer game's `step`: a player asked again comes after the other's move between,
    as `Results.moves()` orders them); in the store's order (by agent) otherwise."""
    steps = []
    for decision in decisions:
        try:
            situation = codec.decode(decision[0][6]) if decision[0][6] else None
        except (ValueError, KeyError, TypeError):  # a context this codec does not read: the store's order
            return decisions
        step = getattr(situation, "step", None)
        if not isinstance(step, int) or isinstance(step, bool):
            return decisions
        steps.append(step)
    order = sorted(range(len(decisions)), key=lambda index: (steps[index], decisions[index][0][3], index))
    return [decisions[index] for index in order]


def _decision_calls(decision: list[Row], codec: Any, base: int) -> Iterator[Call]:
    """One decision's calls, each with the messages it added to what was shown before it."""
    context: str | None = None
    replies: list[str] = []
    shown = 0
    for run_id, round_number, t, agent_id, model, attempt, row_context, reply, parsed, error, action, payoff, fell in decision:
        first = attempt == 0 or bool(row_context)  # a decision starts at its row with a context
        if first:
            context, replies, shown = row_context, [], 0
        if context is None:
            continue
        messages = codec.rebuild_messages(context, tuple(replies))
        # Every message not shown yet: a kept conversation's earlier assistant turns included; this
        # decision's own earlier replies were printed as replies (`shown` counts them).
        new = tuple(messages[shown:])
        shown = len(messages)
        if reply is not None:
            replies.append(reply)
            shown += 1  # the reply is printed as the reply, not again as an assistant message
        yield Call(run_id, None if round_number is None else round_number + base, t, agent_id, model or "", attempt, reply,
                   parsed, error, action, payoff, new, bool(fell), first)


def write_transcript(directory: Path | str, out: TextIO, *, run: int | None = None, agent: int | None = None,
                     round_: int | None = None) -> int:
    """Print the calls under `directory` that match the filters; returns how many."""
    experiments = find_experiments(directory)
    if not experiments:
        raise UserError(f"no runs found under '{directory}'; give the output directory of a run")
    printed = 0
    with tempfile.TemporaryDirectory(prefix="agentsim-templates-") as scratch:
        try:
            for number, experiment in enumerate(experiments):
                cell = _cell_runs(experiment)
                if run is not None and run not in cell:
                    continue
                scenario = rebuilding_scenario(experiment, Path(scratch) / str(number))
                out.write(f"### {experiment.label}: {experiment.scenario_name}, backend {experiment.backend}\n")
                for call in calls(experiment, scenario, run=run, agent=agent, round_=round_):
                    _write_call(out, call, cell.get(call.run))
                    printed += 1
        finally:
            for experiment in experiments:
                experiment.close()
    if not printed:
        wanted = ", ".join(f"{name} {value}" for name, value in (("run", run), ("agent", agent), ("round", round_))
                           if value is not None)
        raise UserError(f"no recorded calls under '{directory}'" + (f" for {wanted}" if wanted else "")
                        + "; check the filters (runs of rule agents make no calls)")
    return printed


def _write_call(out: TextIO, call: Call, seed: int | None) -> None:
    out.write(call_text(call, seed))


def call_text(call: Call, seed: int | None) -> str:
    """One call as `transcript` prints it (the heading before a decision's first attempt, the
    messages it added, the reply, how it was read and what was played); `watch` shows the same."""
    parts = []
    where = f"round {call.round}" if call.round is not None else "round ?"
    if call.first:
        again = " · asked again" if call.attempt else ""  # a later move of the agent in the same encounter
        parts.append(f"\n=== run {call.run} (seed {seed}) · {where} · t {call.t} · agent {call.agent} ({call.model}){again} ===\n")
    parts.extend(f"[{message.role}]\n{message.content}\n" for message in call.new_messages)
    if call.reply is not None:
        parts.append(f"[reply, attempt {call.attempt}]\n{call.reply}\n")
    verdict = f"read as {call.parsed}" if call.parsed is not None else "read as nothing"
    if call.error:
        verdict += f" ({call.error})"
    if call.payoff is not None:
        played = f"{call.action} (a fallback: no reply gave it; drawn by the fallback rule)" if call.fallback else call.action
        verdict += f"; played {played}, payoff {call.payoff:g}"
    parts.append(f"→ {verdict}\n")
    return "".join(parts)
