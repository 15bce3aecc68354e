"""SIGN's prompt codec: the condition's prompt (Schema, NL-SW or NL), the reply read by the
schema parser or the free-text decoder, the Schema condition's reminder and salvage (a name
decoded from a non-compliant reply), the fallback, and the situation in a few bytes.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from ...codec import Codec, Parsed
from ...llm.base import Message
from ..pairwise import name_codes
from .schema import FreeTextDecoder, SchemaParser
from .situation import SignSituation

if TYPE_CHECKING:
    from .game import SignGame


class SignCodec(Codec[SignSituation]):
    """What a SIGN agent is asked and how its reply is read, for one game."""

    def __init__(self, game: SignGame) -> None:
        self.game = game

    @cached_property
    def _schema(self) -> SchemaParser:
        return SchemaParser(self.game.names)

    @cached_property
    def _decoder(self) -> FreeTextDecoder:
        return FreeTextDecoder(self.game.names)

    @cached_property
    def _sign_codes(self) -> tuple[dict[str, str], dict[str, str]]:
        encode = name_codes(self.game.names)
        return encode, {code: name for name, code in encode.items()}

    def messages(self, situation: SignSituation) -> tuple[Message, ...]:
        template = self.game.template
        system = template.render("system", lexicon=", ".join(self.game.names), agent=situation.agent,
                                 round=situation.round, current=situation.current,
                                 history=self._history(situation.memory))
        return (Message("system", system), Message("user", template.sections["user"]))

    def _history(self, memory: tuple[str, ...]) -> str:
        if not memory or self.game.condition == "nl":
            return ""
        template = self.game.template
        entries = " | ".join(template.render("entry", partner=name) for name in memory)
        return template.render("history", entries=entries) + "\n"

    def parse(self, text: str, situation: SignSituation) -> Parsed:
        if self.game.condition == "schema":
            return self._schema.parse(text)
        return self._decoder.parse(text)

    def salvage(self, reply: str, situation: SignSituation) -> str | None:
        """Step 3 of the Schema ladder: a name decoded from a non-compliant reply's free text.
        Free-text conditions have nothing to salvage (their parser is the decoder)."""
        return self._decoder.decode(reply) if self.game.condition == "schema" else None

    def reminder(self, situation: SignSituation, parsed: Parsed) -> str:
        return self.game.template.render("reminder", lexicon=", ".join(self.game.names))

    def fallback(self, situation: SignSituation, unit: float) -> str | None:
        mode, names = self.game.params.fallback, self.game.names
        if mode == "none":
            return None
        if mode == "previous":
            return situation.current
        return names[min(int(unit * len(names)), len(names) - 1)]

    # --- the store: a prompt in a few bytes -----------------------------------------------
    def encode(self, situation: SignSituation) -> str:
        code = self._sign_codes[0]
        return f"{situation.agent}.{situation.round}." + code[situation.current] + "".join(map(code.__getitem__, situation.memory))

    def decode(self, context: str) -> SignSituation:
        agent, round_, codes = context.split(".", 2)
        name = self._sign_codes[1]
        return SignSituation(self.game.names, name[codes[0]], tuple(name[code] for code in codes[1:]), int(round_),
                             int(agent), schema=self.game.demands_schema)
