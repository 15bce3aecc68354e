"""The naming game's prompt codec: the paper's prompt (a template: the standard, narrative or
bullet-point variant, or a file), the answer-first reply read back, the reminder, the
fallback, and the situation in about twenty bytes for the store.

The codec reads the game for what a subclass may change: its template, its payoff (prompts
show it), its extra template fields (`prompt_fields`) and its name pool.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from ...codec import Codec, Parsed
from ...llm.base import Message, Request
from ..pairwise import name_codes
from .answers import AnswerReader
from .fitness import probe_requests
from .situation import NamingSituation

if TYPE_CHECKING:
    from .game import NamingGame


class NamingCodec(Codec[NamingSituation]):
    """What a naming-game agent is asked and how its answer is read, for one game."""

    def __init__(self, game: NamingGame) -> None:
        self.game = game

    @cached_property
    def _answers(self) -> AnswerReader:
        return AnswerReader(self.game.names)

    @cached_property
    def _codes(self) -> tuple[dict[str | None, str], dict[str, str | None]]:
        encode: dict[str | None, str] = {None: "/"}
        encode.update(name_codes(self.game.names))
        return encode, {code: name for name, code in encode.items()}

    def messages(self, situation: NamingSituation) -> tuple[Message, ...]:
        system, entry, history, constant, user, both = self._rendering
        memory, options = situation.memory, situation.options
        try:
            if memory:
                entries = "\n".join([entry(round=number, own=own, partner=partner, payoff=payoff)
                                      for number, (own, partner, payoff) in enumerate(memory, start=1)])
                block = history(entries=entries) + "\n"
            else:
                block = ""
            text = system(**constant, options=f"[{', '.join(options)}]", history=block, round=len(memory) + 1,
                          score=sum([payoff for *_, payoff in memory]),
                          **({"options_text": self._spoken(options)} if both else {}))
        except (KeyError, IndexError):  # a field nobody fills in: `render` says which, in the template's words
            return self._checked_messages(situation)
        return (Message("system", text), user)

    def _checked_messages(self, situation: NamingSituation) -> tuple[Message, ...]:
        """`messages` through `PromptTemplate.render`, which names a field the template uses and
        nobody fills in (the same text otherwise)."""
        template, memory = self.game.template, situation.memory
        block = ""
        if memory:
            entries = "\n".join(template.render("entry", round=number, own=own, partner=partner, payoff=payoff)
                                for number, (own, partner, payoff) in enumerate(memory, start=1))
            block = template.render("history", entries=entries) + "\n"
        system = template.render("system", **self._rendering[3], **self._option_fields(situation.options),
                                 history=block, round=len(memory) + 1, score=sum(payoff for *_, payoff in memory))
        return (Message("system", system), Message("user", template.sections["user"]))

    @cached_property
    def _rendering(self) -> tuple[Callable[..., str], Callable[..., str], Callable[..., str], dict[str, object], Message,
                                  bool]:
        """What every prompt of the experiment shares, bound once: the sections' `format`, the
        fields fixed for the whole experiment (the payoffs as the prompt words them, the game's
        `prompt_fields`), the user turn, and whether the template words the options both ways."""
        game = self.game
        template, params = game.template, game.params
        constant = {"success_payoff": f"{params.success_payoff:+d}", "failure_payoff": f"{params.failure_payoff:+d}",
                    **game.prompt_fields()}
        return (template.sections["system"].format, template.sections["entry"].format,
                template.sections["history"].format, constant, Message("user", template.sections["user"]),
                "options_text" in template.fields("system"))

    def readable_probes(self, count: int, seed: int) -> list[tuple[Request, NamingSituation]]:
        return list(probe_requests(self.game, count, seed))

    def unreadable_advice(self) -> str:
        if self.game.params.constrained_decoding:
            return "this model cannot be used for the naming game here even with the answer grammar"
        return "constrain its answers with the grammar: --set constrained_decoding=true"

    def parse(self, text: str, situation: NamingSituation) -> Parsed:
        return self._answers.parse(text)

    def reminder(self, situation: NamingSituation, parsed: Parsed) -> str:
        return self.game.template.render("reminder", **self._option_fields(situation.options))

    def fallback(self, situation: NamingSituation, unit: float) -> str | None:
        mode = self.game.params.fallback
        if mode == "none":
            return None
        if mode == "previous" and situation.memory and situation.memory[-1][0] is not None:
            return situation.memory[-1][0]
        ordered = sorted(situation.options)
        return ordered[int(unit * len(ordered))]

    @staticmethod
    def _option_fields(options: tuple[str, ...]) -> dict[str, object]:
        """The option list as a template may word it: `[A, B, C]` or `A, B and C`."""
        return {"options": f"[{', '.join(options)}]", "options_text": NamingCodec._spoken(options)}

    @staticmethod
    def _spoken(options: tuple[str, ...]) -> str:
        return f"{', '.join(options[:-1])} and {options[-1]}" if len(options) > 1 else options[0]

    # --- the store: a prompt in about twenty bytes ----------------------------------------
    def encode(self, situation: NamingSituation) -> str:
        """The option order then (own, partner) per memory entry, one character per name;
        payoffs follow from the game's `payoff`."""
        code = self._codes[0]
        return "".join(map(code.__getitem__, situation.options)) + "".join(
            [code[own] + code[partner] for own, partner, _ in situation.memory])

    def decode(self, context: str) -> NamingSituation:
        names, payoff = self.game.names, self.game.payoff
        name = self._codes[1]
        width = len(names)
        option = {code: option for option, code in name_codes(names).items()}
        options = tuple(option[char] for char in context[:width])
        memory = tuple(
            (own, partner, payoff(own, partner))
            for own, partner in ((name[context[i]], name[context[i + 1]]) for i in range(width, len(context), 2))
        )
        return NamingSituation(options, memory)
