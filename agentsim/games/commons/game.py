"""GovSim, the governance of the commons (Piatti et al., "Cooperate or Collapse", NeurIPS
2024), as a scenario on the common scheduler.

Five villagers share a resource of capacity 100 (fish in a lake; grass on a pasture and a
river's capacity to absorb pollution are the same dynamics with other words). Each month:

1. harvest: every villager privately says how much it takes, between 0 and the stock; if the
   demand exceeds the stock, each unit goes to a uniformly random villager whose demand is not
   yet met (dice from the run's seed); a stock below 5 after harvest is a collapse, and the
   run ends;
2. discussion (unless `communication` is off): the mayor opens with each villager's catch,
   then one villager speaks at a time (the first drawn at random, then whomever the speaker
   names), at most ten utterances; a framework model then reads the agreed per-person limit
   from the conversation, which every villager keeps as a memory;
3. reflection at home: each villager writes insights from its retrieved memories;
4. the stock doubles, up to capacity.

Every memory a villager writes (its harvest, the conversation, its insights) is rated for
importance by the villager's own model as it is stored; retrieval weighs recency, importance
and relevance (memory.py). Variants: `universalization` (the sustainability-threshold sentence
in memory every month), `newcomer` (a greedy villager joins after three months of four),
`communication=false` (the no-language ablation), and mixed-model groups (`--population`).

Each step is one scheduler round whose groups the state proposes: the harvest is one group of
every present villager, an utterance is one speaker, the limit is the framework agent, a
reflection or an importance rating is one encounter per villager. A checkpoint between rounds
(with the open encounter kept) holds the whole state, so a run killed mid-discussion resumes
at the utterance it was at.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import replace
from functools import cached_property
from typing import Any

from ...agents import PopulationAgent
from ...llm.base import Message
from ...llm.standin import StandInRule
from ...model import PopulationModel
from ...policies import LLMPolicy
from ...records import Decision, EncounterRecord, Move
from ...scenario import Parsed, Scenario
from ...scheduler import Encounter, GroupPairing, Pairing
from . import parser, prompts
from .memory import MemoryItem, retrieve
from .metrics import MonthRecord, run_metrics
from .params import CommonsParams
from .situations import CommonsSituation
from .standin import CommonsStandIn, CommonsStandInSettings
from .state import CommonsState, StepStats

HARVEST_FOCUS = "how much to {take} this month: the {resource} {where}, the others' catches and any agreed limit"
REFLECTION_FOCUS = "the {resource} {where}, what everyone {taken}, and what the community agreed"


class StepPairing(GroupPairing):
    """The groups of the month's current step, proposed from the run's state."""

    def groups(self, model: PopulationModel, count: int) -> list[tuple[int, ...]]:
        game = model.scenario
        assert isinstance(game, CommonsGame), "StepPairing belongs to CommonsGame"
        return game.step_groups(model)


class CommonsGame(Scenario[CommonsParams]):
    name = "commons"
    Params = CommonsParams
    standin: CommonsStandInSettings = CommonsStandInSettings()

    @cached_property
    def words(self) -> prompts.Words:
        return prompts.WORDS[self.params.resource]

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"resource": self.params.resource}

    # --- the population and the run's state ----------------------------------------------
    def build_population(self, model: PopulationModel) -> None:
        params = self.params
        sampling = params.sampling()
        for index in range(params.agents + 1):  # the villagers, then the framework model
            PopulationAgent(model, LLMPolicy(model.backend_for(index), sampling, max_reasks=params.max_reasks),
                            memory_length=None)

    def new_metrics(self, model: PopulationModel) -> CommonsState:
        params = self.params
        villagers = list(range(params.agents))
        names = [prompts.NAMES[index % len(prompts.NAMES)] + ("" if index < len(prompts.NAMES) else str(index))
                 for index in villagers]
        state = CommonsState(names=names, villagers=villagers, framework=params.agents, stock=params.initial_stock)
        state.present = villagers[:-1] if params.newcomer else list(villagers)
        self._start_month(model, state)
        return state

    def pairing(self, model: PopulationModel) -> Pairing:
        return StepPairing()

    def max_rounds(self) -> int:
        """`max_rounds` when set; else a bound the run never reaches (it ends with its months
        or a collapse), which gives the live view its progress: per month at most three
        rating rounds, the harvest, the utterances, the limit, the reflection and one rating
        round per insight."""
        params = self.params
        return params.max_rounds or params.months * (7 + params.max_utterances + params.max_insights)

    def stop_reason(self, model: PopulationModel) -> str | None:
        return model.metrics.finished

    def step_groups(self, model: PopulationModel) -> list[tuple[int, ...]]:
        state: CommonsState = model.metrics
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
            return [(index,) for index in state.present]
        return [(index,) for index in state.present if _unrated(_agent(model, index))]

    # --- encounters ------------------------------------------------------------------------
    def draw(self, model: PopulationModel, encounter: Encounter) -> Any:
        """A harvest's dice: the seed of its unit allocation and the first speaker's draw."""
        if model.metrics.phase == "harvest":
            return model.random.getrandbits(64), model.random.random()
        return None

    def start(self, model: PopulationModel, encounter: Encounter) -> tuple[CommonsSituation, ...]:
        state: CommonsState = model.metrics
        return tuple(self.situation(model, state, agent) for agent in encounter.agents)

    async def play(self, model: PopulationModel, encounter: Encounter) -> tuple[Decision, ...]:
        agents, views = encounter.agents, encounter.views
        if model.immediate:
            return tuple([await agent.astep(view) for agent, view in zip(agents, views)])
        return tuple(await asyncio.gather(*(agent.astep(view) for agent, view in zip(agents, views))))

    def resolve(self, model: PopulationModel, encounter: Encounter, decisions: tuple[Decision, ...]) -> EncounterRecord:
        state: CommonsState = model.metrics
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
        state.steps.setdefault(encounter.round, StepStats({"month": state.month, "step": step, "stock": state.stock}))
        return EncounterRecord(encounter.t, encounter.round, outcome, moves, calls)

    def on_round_end(self, model: PopulationModel) -> None:
        """Move the month on to its next step."""
        state: CommonsState = model.metrics
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
        if following == "month_end":
            self._end_month(model, state)
            return
        if any(_unrated(_agent(model, index)) for index in state.present):
            state.phase, state.after_importance = "importance", following
            return
        if following == "utterance" and phase != "utterance":
            caught = tuple((state.names[index], state.current.caught[index]) for index in state.present)
            state.conversation = [(prompts.MAYOR, prompts.mayor_report(self.words, caught))]
            state.speaker, state.discussion_over = state.first_speaker, False
        state.phase = following

    # --- steps ---------------------------------------------------------------------------------
    def _resolve_harvest(self, model: PopulationModel, state: CommonsState, encounter: Encounter,
                         decisions: tuple[Decision, ...]) -> tuple[list[Move], int]:
        allocation_seed, speaker_die = encounter.drawn
        wanted = {agent.index: int(decision.action or 0) for agent, decision in zip(encounter.agents, decisions)}
        fallbacks = frozenset(agent.index for agent, decision in zip(encounter.agents, decisions) if decision.fallback)
        caught = allocate(wanted, state.stock, random.Random(allocation_seed))
        record = state.current
        record.wanted, record.caught, record.fallbacks = wanted, caught, fallbacks
        state.stock -= sum(caught.values())
        record.stock_after = state.stock
        state.first_speaker = state.present[int(speaker_die * len(state.present))]
        for agent in encounter.agents:
            text = prompts.harvest_line(self.words, state.names[agent.index], wanted[agent.index], caught[agent.index])
            self._remember(state, agent, text, "observation")
        if state.stock < self.params.collapse_below:
            record.collapsed = True
            state.finished = "collapse"
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
        for index in state.present:
            villager = _agent(model, index)
            self._remember(state, villager, chat, "chat")
            if limit is not None:
                self._remember(state, villager, prompts.limit_line(self.words, limit), "limit", always=True)
        return [Move(agent.index, decision.action, 0)]

    def _resolve_reflection(self, model: PopulationModel, state: CommonsState, agent: PopulationAgent,
                            decision: Decision) -> list[Move]:
        for insight in json.loads(decision.action) if decision.action else []:
            self._remember(state, agent, insight, "insight")
        return [Move(agent.index, decision.action, 0)]

    def _resolve_importance(self, agent: PopulationAgent, decision: Decision) -> list[Move]:
        position = next(position for position, item in enumerate(agent.memory) if _needs_rating(item))
        rating = int(decision.action) if decision.action else 1
        agent.memory[position] = agent.memory[position]._replace(importance=rating)
        return [Move(agent.index, decision.action, 0)]

    def _remember(self, state: CommonsState, agent: PopulationAgent, text: str, kind: str, *, always: bool = False) -> None:
        agent.memory.append(MemoryItem(state.memories_made, state.date(), text, kind, None, always))
        state.memories_made += 1

    def _start_month(self, model: PopulationModel, state: CommonsState) -> None:
        params = self.params
        if params.newcomer and state.month == params.newcomer_month:
            state.present.append(state.villagers[-1])
            state.greedy.add(state.villagers[-1])
        threshold = params.threshold(state.stock, len(state.present))
        state.history.append(MonthRecord(state.month, state.stock, threshold))
        for index in state.present:
            villager = _agent(model, index)
            self._remember(state, villager, prompts.stock_line(self.words, state.stock), "observation")
            if params.universalization:
                self._remember(state, villager, prompts.universalization_line(self.words, threshold), "universalization",
                               always=True)
        # What the villagers perceive at the lake is rated for importance before they harvest.
        state.phase, state.after_importance = "importance", "harvest"

    def _end_month(self, model: PopulationModel, state: CommonsState) -> None:
        params = self.params
        state.stock = min(params.capacity, int(state.stock * params.growth))
        state.current.stock_regrown = state.stock
        state.conversation, state.speaker = [], None
        if state.month >= params.months:
            state.finished = "months"
            return
        state.month += 1
        self._start_month(model, state)

    # --- what each agent is asked ------------------------------------------------------------
    def situation(self, model: PopulationModel, state: CommonsState, agent: PopulationAgent) -> CommonsSituation:
        params, words, phase = self.params, self.words, state.phase
        base = CommonsSituation(kind=phase, month=state.month, agent=agent.index, date=state.date(),
                                silent=not params.communication)
        if phase == "limit":
            return replace(base, conversation=tuple(state.conversation))
        base = replace(base, name=state.names[agent.index], greedy=agent.index in state.greedy,
                       others=tuple(state.names[index] for index in state.present if index != agent.index))
        memories = list(agent.memory)
        if phase == "harvest":
            focus = HARVEST_FOCUS.format(take=words.take, resource=words.resource, where=words.where)
            return replace(base, stock=state.stock, memories=_pairs(retrieve(memories, [focus], params.retrieve_top_k)))
        if phase == "utterance":
            focal = [prompts.mayor_report(words, ())] + [utterance for _, utterance in state.conversation[-4:]]
            return replace(base, memories=_pairs(retrieve(memories, focal, params.retrieve_top_k)),
                           conversation=tuple(state.conversation),
                           participants=tuple(state.names[index] for index in state.present))
        if phase == "reflection":
            focus = REFLECTION_FOCUS.format(resource=words.resource, where=words.where, taken=words.taken)
            return replace(base, memories=_pairs(retrieve(memories, [focus], params.reflection_top_k)))
        return replace(base, memory=next(item for item in memories if _needs_rating(item)).text)

    def messages(self, situation: CommonsSituation) -> tuple[Message, ...]:
        params, words, kind = self.params, self.words, situation.kind
        if kind == "limit":
            return (Message("user", prompts.limit_prompt(words, situation.conversation)),)
        system = Message("system", prompts.system_prompt(
            words, name=situation.name, others=situation.others, capacity=params.capacity,
            communication=not situation.silent, greedy=situation.greedy))
        if kind == "harvest":
            text = (prompts.location_time(words.place, situation.date) + prompts.memory_block(situation.name, situation.memories)
                    + "\n" + prompts.harvest_task(words, situation.stock))
        elif kind == "utterance":
            text = (prompts.location_time("restaurant", situation.date)
                    + prompts.memory_block(situation.name, situation.memories) + "\n"
                    + f"Scenario: {prompts.comma_list(situation.participants)} are engaged in a group chat.\n"
                    + "Conversation so far:\n" + prompts.conversation_text(situation.conversation) + "\n\n"
                    + prompts.UTTERANCE_TASK)
        elif kind == "reflection":
            text = prompts.memory_block(situation.name, situation.memories, numbered=True) + "\n" + prompts.REFLECTION_TASK
        else:
            text = prompts.IMPORTANCE_TASK.format(memory=situation.memory)
        return system, Message("user", text)

    def parse(self, text: str, situation: CommonsSituation) -> Parsed:
        kind = situation.kind
        if kind == "harvest":
            return parser.parse_harvest(text, situation.stock)
        if kind == "utterance":
            return parser.parse_utterance(text, situation.name, situation.participants)
        if kind == "limit":
            return parser.parse_limit(text)
        if kind == "reflection":
            return parser.parse_reflection(text, self.params.max_insights)
        return parser.parse_importance(text)

    def reminder(self, situation: CommonsSituation, parsed: Parsed) -> str:
        kind = situation.kind
        if kind == "harvest":
            return prompts.harvest_reminder(self.words, situation.stock)
        if kind == "utterance":
            return prompts.utterance_reminder(tuple(name for name in situation.participants if name != situation.name))
        if kind == "limit":
            return prompts.LIMIT_REMINDER
        if kind == "reflection":
            return prompts.REFLECTION_REMINDER
        return prompts.IMPORTANCE_REMINDER

    def salvage(self, reply: str, situation: CommonsSituation) -> str | None:
        """A number out of range, brought into it; an utterance whose format failed, ending the
        discussion. Recorded as fallbacks, like everything below."""
        if situation.kind == "harvest":
            return parser.salvage_harvest(reply, situation.stock)
        if situation.kind == "utterance":
            return parser.salvage_utterance(reply)
        return None

    def fallback(self, situation: CommonsSituation, unit: float) -> str | None:
        """What a step takes when no usable reply came: a harvest of 0 (GovSim's default, but
        recorded as a fallback, counted in `harvest_fallbacks` and left out of over-usage), no
        utterance (the discussion ends), no agreed limit, no insights, the lowest importance."""
        return {"harvest": "0", "utterance": None, "limit": "none", "reflection": "[]", "importance": "1"}[situation.kind]

    def encode(self, situation: CommonsSituation) -> str:
        return situation.encode()

    def rebuild_messages(self, context: str, replies: tuple[str, ...] = ()) -> tuple[Message, ...]:
        situation = CommonsSituation.decode(context)
        messages = self.messages(situation)
        for reply in replies:
            messages += (Message("assistant", reply), Message("user", self.reminder(situation, self.parse(reply, situation))))
        return messages

    # --- measuring -------------------------------------------------------------------------------
    def run_summary(self, model: PopulationModel) -> dict[str, Any]:
        state: CommonsState = model.metrics
        params = self.params
        labels = {agent.index: agent.policy.label for agent in model.agents}
        summary = run_metrics(
            state.history, horizon=params.months, villagers=state.villagers,
            initial_sustainable=params.sustainable_catch(params.initial_stock),
            names=dict(enumerate(state.names)), models=labels)
        summary |= {"resource": params.resource, "months": len(state.history),
                    "condition": self.condition(), "framework_model": labels[state.framework]}
        return summary

    def condition(self) -> str:
        """The paper's name for this setting: default, universalization, newcomer, no communication."""
        params = self.params
        parts = [name for name, on in (("newcomer", params.newcomer), ("universalization", params.universalization),
                                      ("no-communication", not params.communication)) if on]
        return "+".join(parts) or "default"

    def live_metrics(self, model: PopulationModel) -> dict[str, Any]:
        state: CommonsState = model.metrics
        limits = [record.limit for record in state.history if record.limit is not None]
        return {"lines": [
            ("month", f"{state.month} of {self.params.months}, {state.phase}"),
            ("stock", f"{state.stock} of {self.params.capacity} {self.words.unit_plural}"
             + (" (collapsed)" if state.finished == "collapse" else "")),
            ("agreed limit", f"{limits[-1]} {self.words.unit_plural} per person" if limits else "none yet"),
        ]}

    def standin_rules(self) -> list[StandInRule]:
        return [CommonsStandIn(self.standin, capacity=self.params.capacity, unit=self.words.unit_plural)]


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


def _needs_rating(item: MemoryItem) -> bool:
    return item.importance is None and not item.always


def _unrated(agent: PopulationAgent) -> bool:
    return any(_needs_rating(item) for item in agent.memory)


def _pairs(items: tuple[MemoryItem, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((item.date, item.text) for item in items)
