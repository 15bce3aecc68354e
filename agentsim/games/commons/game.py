"""GovSim, the governance of the commons (Piatti et al., "Cooperate or Collapse", NeurIPS
2024), as a scenario on the common scheduler, step by step as GovSim's code runs a month
(simulation/scenarios/common/environment/concurrent_env.py and the persona_v3 agents; paths
are GovSim's repository's).

Five villagers share a resource of capacity 100 (fish in a lake; grass on a pasture and a
river's capacity to absorb pollution are the same dynamics in GovSim's other words). Each
month, on GovSim's calendar (harvest on the 1st, discussion the day before the last,
reflection on the last):

1. harvest: every villager sees the stock (and, with universalization, the threshold
   sentence), retrieves its top memories and privately says how much it takes; what it asks
   for is recorded as asked, above the stock too; if the demand exceeds the stock, each unit
   goes to a uniformly random villager whose demand is not yet met (dice from the run's seed).
   Each villager then remembers its own catch;
2. discussion (unless `communication` is off): the mayor opens with each villager's catch,
   then the first villager (GovSim: John) speaks, then whomever the speaker names, at most
   nine utterances (ten steps with the mayor's); a framework model then reads the agreed
   per-person limit from the conversation, which every villager keeps as a memory for 63
   days, beside the conversation itself;
3. reflection at home: each villager writes insights from its retrieved memories;
4. a stock below 5 after the harvest is a collapse: the run ends here, after the month's
   discussion and reflection, as GovSim's code ends it; else the stock doubles, up to
   capacity.

The stock, the catch and the universalization sentence are kept for the month (they expire
on its last day); the agreed limit, the conversation and the insights for 63 days. Only the
conversation and the insights are rated for importance (by the villager's own model, as GovSim
rates them); the rest is always retrieved. Variants: `universalization`, `newcomer` (four
locals for three months, then an outsider; 15 months), `communication=false` (the
no-language ablation), and mixed-model groups (`--population`).

Each step is one scheduler round whose groups the state proposes: the harvest is one group of
every present villager, an utterance is one speaker, the limit is the framework agent, a
reflection or an importance rating is one encounter per villager. A checkpoint between rounds
(with the open encounter kept) holds the whole state, so a run killed mid-discussion resumes
at the utterance it was at.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import replace
from datetime import date
from functools import cached_property
from typing import Any, ClassVar

from ...agents import PopulationAgent, ask_together
from ...figures import LiveFigures
from ...model import PopulationModel
from ...parts import Readout, StandInPart
from ...policies import LLMPolicy
from ...records import Decision, EncounterRecord, Move
from ...scenario import Scenario
from ...scheduler import Encounter, GroupPairing, Pairing
from ...views import Chart, Mark, Series, Stat, Views, percent
from . import parser, prompts
from .codec import CommonsCodec
from .grammars import answer_options
from .memory import MemoryItem, retrieve
from .metrics import MonthRecord, run_metrics
from .params import CommonsParams
from .situations import CommonsSituation
from .standin import CommonsStandIn, CommonsStandInSettings
from .state import KEPT, CommonsState, StepLog, StepStats


class StepPairing(GroupPairing):
    """The groups of the month's current step, proposed from the run's state."""

    def groups(self, model: PopulationModel, count: int) -> list[tuple[int, ...]]:
        game = model.scenario
        assert isinstance(game, CommonsGame), "StepPairing belongs to CommonsGame"
        return game.step_groups(model)


class CommonsGame(Scenario[CommonsParams, CommonsSituation, CommonsState]):
    name = "commons"
    Params = CommonsParams
    standin: CommonsStandInSettings = CommonsStandInSettings()
    summary_dtypes: ClassVar[Mapping[str, str]] = {
        "outcome": "string", "survival_months": "Int64", "survived": "boolean", "collapse_month": "Int64",
        "gain": "Float64", "gains.*": "Int64", "total_harvest": "Int64", "efficiency": "Float64",
        "equality": "Float64", "over_usage": "Float64", "harvest_fallbacks": "Int64", "resource": "string",
        "months": "Int64", "condition": "string", "framework_model": "string",
    }
    round_dtypes: ClassVar[Mapping[str, str]] = {"month": "Int64", "step": "string", "stock": "Int64"}

    @cached_property
    def words(self) -> prompts.Words:
        return prompts.WORDS[self.params.resource]

    @cached_property
    def codec(self) -> CommonsCodec:
        """GovSim's prompts, the reading of replies and the store's encoding (codec.py)."""
        return CommonsCodec(self)

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"resource": self.params.resource}

    # --- the population and the run's state ----------------------------------------------
    def build_population(self, model: PopulationModel) -> None:
        params = self.params
        sampling = params.sampling()
        for index in range(params.agents + 1):  # the villagers, then the framework model
            PopulationAgent(model, LLMPolicy(model.backend_for(index), sampling, self.codec, max_reasks=params.max_reasks,
                                             grammar=self.codec.grammar), memory_length=None)

    def new_state(self, model: PopulationModel[CommonsState]) -> CommonsState:
        params = self.params
        villagers = list(range(params.agents))
        names = [prompts.NAMES[index % len(prompts.NAMES)] + ("" if index < len(prompts.NAMES) else str(index))
                 for index in villagers]
        state = CommonsState(names=names, villagers=villagers, framework=params.agents, stock=params.initial_stock)
        state.present = villagers[:params.community]
        self._start_month(model, state)
        return state

    def new_metrics(self, model: PopulationModel) -> StepLog:
        return StepLog()

    def pairing(self, model: PopulationModel) -> Pairing:
        return StepPairing()

    def max_rounds(self) -> int:
        """`max_rounds` when set; else a bound the run never reaches (it ends with its months
        or a collapse), which gives the live view its progress: per month the harvest, the
        utterances, the limit, the conversation's rating, the reflection and one rating
        round per insight."""
        params = self.params
        return params.max_rounds or params.horizon * (4 + params.max_utterances + params.max_insights)

    def stop_reason(self, model: PopulationModel[CommonsState]) -> str | None:
        return model.state.finished

    def step_groups(self, model: PopulationModel[CommonsState]) -> list[tuple[int, ...]]:
        state: CommonsState = model.state
        if state.finished:
            return []
        if state.phase == "harvest":
            return [tuple(state.present)]
        if state.phase == "utterance":
            assert state.speaker is not None
            return [(state.speaker,)]
        if state.phase == "limit":
            return [(state.framework,)]
        if state.phase == "reflection":
            return [(index,) for index in self._reflecting(model, state)]
        return [(index,) for index in state.present if _unrated(_agent(model, index))]

    # --- encounters ------------------------------------------------------------------------
    def draw(self, model: PopulationModel[CommonsState], encounter: Encounter) -> Any:
        """A harvest's dice: the seed of its unit allocation."""
        if model.state.phase == "harvest":
            return model.random.getrandbits(64)
        return None

    def start(self, model: PopulationModel[CommonsState], encounter: Encounter) -> tuple[CommonsSituation, ...]:
        state: CommonsState = model.state
        situations = tuple(self.situation(model, state, agent) for agent in encounter.agents)
        if self.params.constrained_decoding:  # the options the answer grammar's replies name
            situations = tuple(replace(situation, options=answer_options(situation)) for situation in situations)
        return situations

    async def play(self, model: PopulationModel, encounter: Encounter) -> tuple[Decision, ...]:
        return await ask_together(encounter.agents, encounter.views)

    def resolve(self, model: PopulationModel[CommonsState], encounter: Encounter, decisions: tuple[Decision, ...]) -> EncounterRecord:
        state: CommonsState = model.state
        step = state.phase
        calls = [call for decision in decisions for call in decision.calls]
        moves: list[Move]
        outcome = 0
        if step == "harvest":
            moves, outcome = self._resolve_harvest(model, state, encounter, decisions)
        elif step == "utterance":
            moves = self._resolve_utterance(state, encounter.agents[0], decisions[0])
        elif step == "limit":
            moves = self._resolve_limit(model, state, encounter.agents[0], decisions[0])
        elif step == "reflection":
            moves = self._resolve_reflection(model, state, encounter.agents[0], decisions[0])
        else:
            moves = self._resolve_importance(encounter.agents[0], decisions[0])
        model.metrics.steps.setdefault(encounter.round, StepStats({"month": state.month, "step": step, "stock": state.stock}))
        return EncounterRecord(encounter.t, encounter.round, outcome, moves, calls)

    def on_round_end(self, model: PopulationModel[CommonsState]) -> None:
        """Move the month on to its next step."""
        state: CommonsState = model.state
        if state.finished:
            return
        phase = state.phase
        if phase == "importance":
            following = state.after_importance
        elif phase == "harvest":
            following = "utterance" if self.params.communication else "reflection"
        elif phase == "utterance":
            following = "limit" if state.discussion_over else "utterance"
        elif phase == "limit":
            following = "reflection"
        else:
            following = "month_end"
        if following == "reflection" and not self._reflecting(model, state):
            following = "month_end"  # nobody has a memory to reflect on (no communication)
        if any(_unrated(_agent(model, index)) for index in state.present):  # rated as they are stored
            state.phase, state.after_importance = "importance", following
            return
        if following == "month_end":
            self._end_month(model, state)
            return
        if following == "utterance" and phase != "utterance":
            caught = tuple((state.names[index], state.current.caught[index]) for index in state.present)
            state.conversation = [(prompts.MAYOR, prompts.mayor_report(self.words, caught))]
            state.speaker, state.discussion_over = state.present[0], False  # GovSim's John opens
        state.phase = following

    # --- steps ---------------------------------------------------------------------------------
    def _resolve_harvest(self, model: PopulationModel, state: CommonsState, encounter: Encounter,
                         decisions: tuple[Decision, ...]) -> tuple[list[Move], int]:
        wanted = {agent.index: int(decision.action or 0) for agent, decision in zip(encounter.agents, decisions)}
        fallbacks = frozenset(agent.index for agent, decision in zip(encounter.agents, decisions) if decision.fallback)
        caught = allocate(wanted, state.stock, random.Random(encounter.drawn))
        record = state.current
        record.wanted, record.caught, record.fallbacks = wanted, caught, fallbacks
        state.stock -= sum(caught.values())
        record.stock_after = state.stock
        record.collapsed = state.stock < self.params.collapse_below  # the run ends with this month
        discussion, month_end = state.day("discussion"), state.day("reflection")
        for agent in encounter.agents:
            text = self.words.catch.format(name=state.names[agent.index], wanted=wanted[agent.index],
                                           caught=caught[agent.index])
            self._remember(agent, state, text, "catch", discussion, until=month_end, always=True)
        moves = [Move(agent.index, decision.action, caught[agent.index]) for agent, decision in zip(encounter.agents, decisions)]
        return moves, state.stock

    def _resolve_utterance(self, state: CommonsState, agent: PopulationAgent, decision: Decision) -> list[Move]:
        if decision.action is None:
            said, end, following = "", True, None
        else:
            said, end, following = parser.read_utterance(decision.action)
        state.conversation.append((state.names[agent.index], said))
        state.current.utterances += 1
        if end or following is None or state.current.utterances >= self.params.max_utterances:
            state.discussion_over = True
        else:
            state.speaker = state.names.index(following)
        return [Move(agent.index, decision.action, 0)]

    def _resolve_limit(self, model: PopulationModel, state: CommonsState, agent: PopulationAgent,
                       decision: Decision) -> list[Move]:
        limit = None if decision.action in (None, "none") else int(decision.action)
        state.current.limit = limit
        chat = "Conversation at the town hall: " + " | ".join(f"{speaker}: {said}" for speaker, said in state.conversation)
        today = state.day("discussion")
        for index in state.present:
            villager = _agent(model, index)
            self._remember(villager, state, chat, "chat", today, until=today + KEPT)
            if limit is not None and not self.params.keep_superseded_limits:
                _end_earlier_limits(villager, today)
            if limit is not None:
                self._remember(villager, state, self.words.limit_line.format(limit=limit), "limit", today,
                               until=today + KEPT, always=True)
        return [Move(agent.index, decision.action, 0)]

    def _resolve_reflection(self, model: PopulationModel, state: CommonsState, agent: PopulationAgent,
                            decision: Decision) -> list[Move]:
        today = state.day("reflection")
        for insight in json.loads(decision.action) if decision.action else []:
            self._remember(agent, state, insight, "insight", today, until=today + KEPT)
        return [Move(agent.index, decision.action, 0)]

    def _resolve_importance(self, agent: PopulationAgent, decision: Decision) -> list[Move]:
        position = next(position for position, item in enumerate(agent.memory) if _needs_rating(item))
        rating = int(decision.action) if decision.action else 1
        agent.memory[position] = agent.memory[position]._replace(importance=rating)
        return [Move(agent.index, decision.action, 0)]

    @staticmethod
    def _remember(agent: PopulationAgent, state: CommonsState, text: str, kind: str, day: date, *, until: date,
                  always: bool = False) -> None:
        """A memory made on `day` and retrieved until the day before `until`; `always` ones
        (GovSim's always_include) are never rated."""
        agent.memory.append(MemoryItem(state.memories_made, day.isoformat(), text, kind, until.isoformat(), None, always))
        state.memories_made += 1

    def _start_month(self, model: PopulationModel, state: CommonsState) -> None:
        """What every present villager perceives at the start of the month (GovSim's
        _observe_pool): the stock and, with universalization, the threshold sentence, both
        until the month's last day."""
        params = self.params
        if params.newcomer and state.month == params.newcomer_month:
            state.present.append(state.villagers[-1])
            state.greedy.add(state.villagers[-1])
        threshold = params.threshold(state.stock)
        state.history.append(MonthRecord(state.month, state.stock, threshold))
        today, month_end = state.day("harvest"), state.day("reflection")
        for index in state.present:
            villager = _agent(model, index)
            self._remember(villager, state, self.words.stock.format(stock=state.stock), "stock", today, until=month_end,
                           always=True)
            if params.universalization:
                self._remember(villager, state, self.words.universalization.format(threshold=threshold),
                               "universalization", today, until=month_end, always=True)
        state.phase = "harvest"

    def _end_month(self, model: PopulationModel, state: CommonsState) -> None:
        """A collapse ends the run once its month's discussion and reflection are held; else
        the stock regrows and the next month starts."""
        params = self.params
        state.conversation, state.speaker = [], None
        if state.current.collapsed:
            state.finished = "collapse"
            return
        state.stock = min(params.capacity, int(state.stock * params.growth))
        state.current.stock_regrown = state.stock
        if state.month >= params.horizon:
            state.finished = "months"
            return
        state.month += 1
        self._start_month(model, state)

    # --- what each agent is asked ------------------------------------------------------------
    def _reflecting(self, model: PopulationModel, state: CommonsState) -> list[int]:
        """The villagers with a memory to reflect on: GovSim's reflection prompt asks for one
        insight per statement and makes no call without one (reflect_prompts.py), so without
        communication, where the stock and the catch expire on the reflection day, nobody
        reflects."""
        return [index for index in state.present if self._reflection_memories(model, state, _agent(model, index))]

    def _reflection_memories(self, model: PopulationModel, state: CommonsState,
                             agent: PopulationAgent) -> tuple[MemoryItem, ...]:
        return retrieve(list(agent.memory), [prompts.REFLECTION_FOCUS], self.params.reflection_top_k,
                        state.day("reflection").isoformat())

    def situation(self, model: PopulationModel, state: CommonsState, agent: PopulationAgent) -> CommonsSituation:
        params, words, phase = self.params, self.words, state.phase
        base = CommonsSituation(kind=phase, month=state.month, agent=agent.index, silent=not params.communication)
        if phase == "limit":
            return replace(base, conversation=tuple(state.conversation))
        role = ("newcomer" if agent.index in state.greedy else "local") if params.newcomer else ""
        base = replace(base, name=state.names[agent.index], role=role,
                       others=tuple(state.names[index] for index in state.present if index != agent.index))
        memories = list(agent.memory)
        if phase == "harvest":
            today = state.day("harvest").isoformat()
            top_k = params.harvest_top_k or words.harvest_top_k
            return replace(base, date=today, stock=state.stock,
                           memories=_pairs(retrieve(memories, [words.location], top_k, today)))
        if phase == "utterance":
            today = state.day("discussion").isoformat()
            focal = [""] + [utterance for _, utterance in state.conversation[-4:]]  # GovSim: the (empty) context
            return replace(base, date=today, memories=_pairs(retrieve(memories, focal, params.discussion_top_k, today)),
                           conversation=tuple(state.conversation),
                           participants=tuple(state.names[index] for index in state.present))
        if phase == "reflection":
            return replace(base, date=state.day("reflection").isoformat(),
                           memories=_pairs(self._reflection_memories(model, state, agent)))
        item = next(item for item in memories if _needs_rating(item))
        return replace(base, memory=item.text, memory_kind=item.kind)

    # --- measuring -------------------------------------------------------------------------------
    def readout(self) -> CommonsReadout:
        return CommonsReadout(self)

    def condition(self) -> str:
        """The paper's name for this setting: default, universalization, newcomer, no communication."""
        params = self.params
        parts = [name for name, on in (("newcomer", params.newcomer), ("universalization", params.universalization),
                                      ("no-communication", not params.communication)) if on]
        return "+".join(parts) or "default"

    def standin_part(self) -> StandInPart:
        return StandInPart(rules=[CommonsStandIn(self.standin, capacity=self.params.capacity, unit=self.words.unit)])


class CommonsReadout(Readout[CommonsState]):
    """What a commons run shows: GovSim's metrics of its months (survival, efficiency, equality,
    over-use), and live the month, the stock and the agreed limit."""

    def __init__(self, game: CommonsGame) -> None:
        self.game = game

    def run_summary(self, model: PopulationModel[CommonsState]) -> dict[str, Any]:
        state = model.state
        params = self.game.params
        labels = {agent.index: agent.policy.label for agent in model.agents}
        summary = run_metrics(
            state.history, horizon=params.horizon, villagers=state.villagers,
            initial_sustainable=params.sustainable_catch(params.initial_stock),
            names=dict(enumerate(state.names)), ended=state.finished is not None, models=labels)
        summary |= {"resource": params.resource, "months": len(state.history),
                    "condition": self.game.condition(), "framework_model": labels[state.framework]}
        return summary

    def metrics_now(self, model: PopulationModel[CommonsState]) -> dict[str, Any]:
        """GovSim's metrics of the months so far (`run_metrics`; a run not ended is truncated)."""
        state, params = model.state, self.game.params
        return run_metrics(state.history, horizon=params.horizon, villagers=state.villagers,
                           initial_sustainable=params.sustainable_catch(params.initial_stock),
                           names=dict(enumerate(state.names)), ended=state.finished is not None)

    def months_done(self, model: PopulationModel[CommonsState]) -> float:
        """Months over: the finished ones, the month under way counted by its step."""
        state = model.state
        if state.finished is not None:
            return float(len(state.history))
        return float(state.month - 1) + PHASE_SHARE.get(state.phase, 0.5)

    def state_words(self, model: PopulationModel[CommonsState], metrics: Mapping[str, Any]) -> str:
        state, horizon = model.state, self.game.params.horizon
        if metrics["collapse_month"] is not None:
            return f"collapsed in month {metrics['collapse_month']} of {horizon}"
        if state.finished is not None:
            return f"survived all {len(state.history)} months"
        return f"month {state.month} of {horizon}: {PHASE_WORDS.get(state.phase, state.phase)}"

    def views(self, model: PopulationModel[CommonsState], rounds: Mapping[int, Mapping[str, Any]]) -> Views:
        """What GovSim's paper and dashboard plot, by month: the stock at each month's start and
        after its harvest (across runs: every run's line), each villager's catch, the agreed
        limit, the collapse marked; survived or collapsed and when; the five metrics."""
        state, params, words = model.state, self.game.params, self.game.words
        history = state.history
        metrics = self.metrics_now(model)
        collapse = metrics["collapse_month"]
        marks = () if collapse is None else (Mark(at=float(collapse), label=f"collapse, month {collapse}"),)
        start = Series(name="stock at the month's start", points=tuple((float(r.month), float(r.stock_before)) for r in history))
        after = Series(name="after the harvest", points=tuple((float(r.month), float(r.stock_after))
                                                             for r in history if r.harvested))
        names = dict(enumerate(state.names))
        catches = tuple(Series(name=names[index], points=tuple((float(r.month), float(r.caught.get(index, 0)))
                                                               for r in history if r.harvested))
                        for index in state.villagers)
        limits = Series(name="agreed limit", points=tuple((float(r.month), float(r.limit)) for r in history
                                                          if r.limit is not None))
        thresholds = Series(name="sustainable per person", reference=True,
                            points=tuple((float(r.month), float(r.threshold)) for r in history))
        charts = (
            Chart(key="stock", title=f"stock ({words.stock_unit})", y_label=words.stock_unit, y_min=0,
                  y_max=float(params.capacity), series=(start, after), marks=marks, across="lines",
                  levels=(Mark(at=float(params.collapse_below), label=f"collapse below {params.collapse_below}"),)),
            Chart(key="harvest", title=f"harvest per villager ({words.unit})", y_label=words.unit, y_min=0,
                  series=catches + (thresholds,), marks=marks, note="what each got after allocation; "
                  "the sustainable catch per person for comparison"),
            Chart(key="limit", title=f"agreed limit per person ({words.unit})", y_label=words.unit, y_min=0,
                  series=(limits, thresholds), marks=marks,
                  note="read from each month's discussion" if params.communication else "no discussion in this condition"),
        )
        over = metrics["over_usage"]
        stats = (
            Stat(label="survival", value=float(metrics["survival_months"]),
                 text=("collapsed in month " + str(collapse)) if collapse is not None else
                 f"{metrics['survival_months']} of {params.horizon} months" + ("" if state.finished else " so far")),
            Stat(label="gain", value=float(metrics["gain"]), text=f"{metrics['gain']:g} {words.unit} per villager"),
            Stat(label="efficiency", value=metrics["efficiency"], text=percent(metrics["efficiency"])),
            Stat(label="equality", value=metrics["equality"], text=percent(metrics["equality"])),
            Stat(label="over-usage", value=over, text=percent(over)),
        )
        periods: dict[int, list[int]] = {}
        for round_, line in rounds.items():
            month = line.get("month")
            if isinstance(month, int):
                periods.setdefault(month, []).append(round_)
        return Views(unit="month", done=self.months_done(model), total=float(params.horizon),
                     state=self.state_words(model, metrics), group=self.game.condition(), charts=charts, stats=stats,
                     periods=tuple((float(month), min(found), max(found)) for month, found in sorted(periods.items())))

    def model_series(self, model: PopulationModel[CommonsState]) -> dict[str, float | str | None]:
        """Per step (a step of a month): the month, the stock, the last agreed limit, the last
        month's total catch, and GovSim's metrics so far."""
        state = model.state
        metrics = self.metrics_now(model)
        limits = [record.limit for record in state.history if record.limit is not None]
        harvested = [record for record in state.history if record.harvested]
        nan = float("nan")  # (not None: a column keeps its float dtype)
        return {"month": float(state.month), "stock": float(state.stock),
                "collapsed": float(metrics["collapse_month"] is not None),
                "agreed_limit": float(limits[-1]) if limits else nan,
                "harvest": float(sum(harvested[-1].caught.values())) if harvested else nan,
                "survival_months": float(metrics["survival_months"]), "gain": float(metrics["gain"]),
                "efficiency": float(metrics["efficiency"]), "equality": float(metrics["equality"]),
                "over_usage": nan if metrics["over_usage"] is None else float(metrics["over_usage"])}

    def live_figures(self, model: PopulationModel[CommonsState]) -> LiveFigures:
        state = model.state
        limits = [record.limit for record in state.history if record.limit is not None]
        return LiveFigures(lines=(
            ("month", f"{len(state.history)} of {self.game.params.horizon}, over" if state.finished else
                      f"{state.month} of {self.game.params.horizon}, {PHASE_WORDS.get(state.phase, state.phase)}"),
            ("stock", f"{state.stock} of {self.game.params.capacity} {self.game.words.stock_unit}"
             + (" (collapsed)" if state.history and state.current.collapsed else "")),
            ("agreed limit", f"{limits[-1]} {self.game.words.unit} per person" if limits else "none yet"),
        ))


# A month's steps in plain words, and how far through the month each is.
PHASE_WORDS = {"harvest": "harvesting", "utterance": "discussing", "limit": "agreeing a limit",
               "reflection": "reflecting", "importance": "rating memories"}
PHASE_SHARE = {"harvest": 0.0, "utterance": 0.35, "limit": 0.6, "reflection": 0.75, "importance": 0.9}


def allocate(wanted: dict[int, int], stock: int, rng: random.Random) -> dict[int, int]:
    """The paper's concurrent harvest: everyone gets what they asked if the stock allows;
    otherwise each unit goes to a uniformly random villager whose demand is not yet met,
    until the stock or the demand runs out."""
    if sum(wanted.values()) <= stock:
        return dict(wanted)
    caught = dict.fromkeys(wanted, 0)
    hungry = sorted(index for index, amount in wanted.items() if amount > 0)
    for _ in range(stock):
        if not hungry:
            break
        index = hungry[rng.randrange(len(hungry))]
        caught[index] += 1
        if caught[index] == wanted[index]:
            hungry.remove(index)
    return caught


def _agent(model: PopulationModel, index: int) -> PopulationAgent:
    """Agent `index` (agents are made in index order; Mesa's AgentSet keeps that order)."""
    agent: PopulationAgent = model.agents[index]
    return agent


def _end_earlier_limits(agent: PopulationAgent, today: date) -> None:
    """A new agreement supersedes the one before it: earlier limit memories expire today."""
    for position, item in enumerate(agent.memory):
        if item.kind == "limit" and item.expires > today.isoformat():
            agent.memory[position] = item._replace(expires=today.isoformat())


def _needs_rating(item: MemoryItem) -> bool:
    return item.importance is None and not item.always


def _unrated(agent: PopulationAgent) -> bool:
    return any(_needs_rating(item) for item in agent.memory)


def _pairs(items: tuple[MemoryItem, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((item.date, item.text) for item in items)
