"""Cultural evolution's prompt codec: the text tasks' prompts (a strategy written, inherited or
mutated; norms elicited, revised or mutated) and their reading, shared by every game; each
game's codec (`DonorCodec` in donor.py, `StagCodec` in stag_hunt.py) words its system prompt,
its strategy brief and its turns (`system_prompt`, `strategy_brief`, `turn_prompt`,
`parse_turn`, `remind_turn`). The situation is kept in the store as `prompts.encode` writes it.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ...codec import Codec, Parsed
from ...llm.base import Grammar, Message
from . import prompts
from .params import EvolutionParams
from .parsers import parse_norms, parse_strategy
from .prompts import NORM_KINDS, NORM_MARKERS, STRATEGY_MARKER, Situation, Task


class EvolutionCodec(Codec[Situation]):
    """What an agent of a cultural-evolution game is asked and how its reply is read: the text
    tasks here, a game's own words in its subclass."""

    norms_in_system: ClassVar[str] = prompts.NORMS_IN_SYSTEM  # the paper's sentence on norms, per game
    params: EvolutionParams

    # --- what a game's codec provides -------------------------------------------------------
    def system_prompt(self, norms: str) -> str:
        raise NotImplementedError

    def strategy_brief(self) -> str:
        """The game-specific part of the strategy prompts."""
        raise NotImplementedError

    def turn_prompt(self, view: Situation) -> str:
        """The user message of a game turn."""
        raise NotImplementedError

    def parse_turn(self, text: str, view: Situation) -> Parsed:
        raise NotImplementedError

    def remind_turn(self, view: Situation, parsed: Parsed) -> str:
        raise NotImplementedError

    def turn_grammar(self, view: Situation) -> Grammar:
        """The grammar of a turn's answer, for `constrained_decoding`."""
        raise NotImplementedError

    # --- shared -------------------------------------------------------------------------------
    def norms_block(self, norms: str) -> str:
        return self.norms_in_system.format(norms=norms) if norms else ""

    def grammar(self, situation: Situation) -> Grammar | None:
        """A game turn's answer format with `constrained_decoding`; the texts stay free, but
        with `constrained_texts` a strategy (a norm set) begins with its marker, "My strategy
        will be" ("My cultural norms are:", ...), and runs to the line's end: agentsim's setting,
        for a model too small to write the marker of itself (the notebook constrains nothing)."""
        if not self.params.constrained_decoding:
            return None
        if isinstance(situation, Task):
            if not self.params.constrained_texts:
                return None
            marker = NORM_MARKERS.get(situation.kind, STRATEGY_MARKER)
            written = re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", marker)  # a regex's specials escaped, not its spaces
            return Grammar(kind="regex", value=written + r" [^\n]+")
        return self.turn_grammar(situation)

    def messages(self, situation: Situation) -> tuple[Message, ...]:
        return (Message("system", self.system_prompt(situation.norms)), Message("user", self.user_prompt(situation)))

    def user_prompt(self, situation: Situation) -> str:
        if not isinstance(situation, Task):
            return self.turn_prompt(situation)
        kind, brief = situation.kind, self.strategy_brief()
        if kind == "strategy":
            return prompts.STRATEGY_FIRST.format(name=situation.name, brief=brief)
        if kind == "inherit":
            return prompts.STRATEGY_ADVICE.format(name=situation.name, advice=situation.source, brief=brief)
        if kind == "mutate_strategy":
            return prompts.STRATEGY_MUTATION.format(name=situation.name, old=situation.source, brief=brief)
        if kind == "elicit":
            return prompts.ELICIT.format(seed=situation.source)
        if kind == "revise":
            return prompts.REVISE.format(strategy=situation.strategy, norms=situation.norms)
        return prompts.MUTATE.format(old=situation.source)

    def parse(self, text: str, situation: Situation) -> Parsed:
        if isinstance(situation, Task):
            if situation.kind in NORM_KINDS:
                return parse_norms(text, NORM_MARKERS[situation.kind])
            return parse_strategy(text)
        return self.parse_turn(text, situation)

    def reminder(self, situation: Situation, parsed: Parsed) -> str:
        if isinstance(situation, Task):
            if situation.kind in NORM_KINDS:
                return prompts.REMIND_NORMS.format(marker=NORM_MARKERS[situation.kind])
            return prompts.REMIND_STRATEGY
        return self.remind_turn(situation, parsed)

    def salvage(self, reply: str, situation: Situation) -> str | None:
        """A text task's unreadable reply is kept whole as the text (Vallinder and Hughes keep
        it as the strategy), flagged as a fallback; a game turn has nothing to salvage."""
        if isinstance(situation, Task) and reply.strip():
            return reply.strip()
        return None

    def fallback(self, situation: Situation, unit: float) -> str | None:
        return None

    def encode(self, situation: Situation) -> str:
        return prompts.encode(situation)

    def decode(self, context: str) -> Situation:
        return prompts.decode(context)
