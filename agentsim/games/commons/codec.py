"""The commons' prompt codec: GovSim's prompts for each step of a month (harvest, utterance,
the framework model's limit, reflection, importance), the parsers that read the replies, the
reminders, the salvage of a malformed utterance, the fallbacks, and the situation as the store
keeps it (`CommonsSituation.encode`), so the exact messages of any recorded call come back.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...codec import Codec, Parsed
from ...llm.base import Grammar, Message, Request
from ...seeding import derive_seed
from . import parser, prompts
from .grammars import answer_grammar, answer_options
from .situations import CommonsSituation
from .state import month_day

if TYPE_CHECKING:
    from .game import CommonsGame


class CommonsCodec(Codec[CommonsSituation]):
    """What a villager (or the framework model) is asked and how its reply is read."""

    def __init__(self, game: CommonsGame) -> None:
        self.game = game

    def messages(self, situation: CommonsSituation) -> tuple[Message, ...]:
        """One user message, the rules first, as GovSim sends every prompt; the framework
        model's limit extraction has no rules."""
        params, words, kind = self.game.params, self.game.words, situation.kind
        if kind == "limit":
            return (Message("user", prompts.limit_prompt(words, situation.conversation)),)
        text = prompts.rules(words, name=situation.name, others=situation.others, capacity=params.capacity,
                             communication=not situation.silent, role=situation.role) + "\n"
        if kind == "harvest":
            text += (prompts.location_time(words.location, situation.date)
                     + prompts.memory_block(situation.name, situation.memories) + "\n"
                     + words.harvest_task.format(stock=situation.stock))
        elif kind == "utterance":
            text += (prompts.location_time(prompts.RESTAURANT, situation.date)
                     + prompts.memory_block(situation.name, situation.memories) + "\n"
                     + prompts.utterance_task(situation.participants, situation.conversation))
        elif kind == "reflection":
            text += prompts.memory_block(situation.name, situation.memories, numbered=True) + "\n" + prompts.REFLECTION_TASK
        else:
            task = prompts.IMPORTANCE_TASKS[situation.memory_kind or "insight"]
            text += task.format(name=situation.name, memory=situation.memory) + prompts.RATING
        return (Message("user", text),)

    def grammar(self, situation: CommonsSituation) -> Grammar | None:
        """The answer's grammar with `constrained_decoding` (grammars.py), else None."""
        if not self.game.params.constrained_decoding:
            return None
        return answer_grammar(situation, self.game.words, self.game.params.max_insights)

    def readable_probes(self, count: int, seed: int) -> list[tuple[Request, CommonsSituation]]:
        """With `constrained_decoding`, the first month's harvest as each villager is asked it,
        so that a model in process is checked before a run (agentsim/model_fitness.py) and
        `--sample-locally` finds the harvest's choice grammar; without it, none (GovSim's free
        answers are read as they come, and a weak model's show as fallbacks)."""
        params, words = self.game.params, self.game.words
        if not params.constrained_decoding:
            return []
        names = prompts.NAMES[:min(params.community, len(prompts.NAMES))]
        today = month_day(1, "harvest").isoformat()
        probes = []
        for index in range(count):
            agent = index % len(names)
            situation = CommonsSituation(kind="harvest", month=1, agent=agent, name=names[agent],
                                         others=tuple(name for name in names if name != names[agent]),
                                         role="local" if params.newcomer else "", silent=not params.communication,
                                         date=today, stock=params.initial_stock,
                                         memories=((today, words.stock.format(stock=params.initial_stock)),))
            situation = replace(situation, options=answer_options(situation))
            probes.append((Request(messages=self.messages(situation), sampling=params.sampling(),
                                   seed=derive_seed(seed, index), options=situation.options,
                                   grammar=self.grammar(situation), situation=situation), situation))
        return probes

    def unreadable_advice(self) -> str:
        if self.game.params.constrained_decoding:
            return "this model cannot play the commons here even with the answer grammar"
        return "constrain its answers with the grammar: --set constrained_decoding=true"

    def parse(self, text: str, situation: CommonsSituation) -> Parsed:
        kind = situation.kind
        if kind == "harvest":
            return parser.parse_harvest(text)
        if kind == "utterance":
            return parser.parse_utterance(text, situation.name, situation.participants)
        if kind == "limit":
            return parser.parse_limit(text)
        if kind == "reflection":
            return parser.parse_reflection(text, min(self.game.params.max_insights, len(situation.memories)))
        return parser.parse_importance(text)

    def reminder(self, situation: CommonsSituation, parsed: Parsed) -> str:
        kind = situation.kind
        if kind == "harvest":
            return prompts.harvest_reminder(self.game.words)
        if kind == "utterance":
            return prompts.utterance_reminder(tuple(name for name in situation.participants if name != situation.name))
        if kind == "limit":
            return prompts.LIMIT_REMINDER
        if kind == "reflection":
            return prompts.REFLECTION_REMINDER
        return prompts.IMPORTANCE_REMINDER

    def salvage(self, reply: str, situation: CommonsSituation) -> str | None:
        """An utterance whose format failed, ending the discussion: recorded as a fallback,
        like everything below."""
        if situation.kind == "utterance":
            return parser.salvage_utterance(reply)
        return None

    def fallback(self, situation: CommonsSituation, unit: float) -> str | None:
        """What a step takes when no usable reply came: a harvest of 0 (GovSim's default, but
        recorded as a fallback, counted in `harvest_fallbacks` and left out of over-usage), no
        utterance (the discussion ends), no agreed limit, no insights, GovSim's default
        importance of 5."""
        return {"harvest": "0", "utterance": None, "limit": "none", "reflection": "[]", "importance": "5"}[situation.kind]

    def encode(self, situation: CommonsSituation) -> str:
        return situation.encode()

    def decode(self, context: str) -> CommonsSituation:
        return CommonsSituation.decode(context)
