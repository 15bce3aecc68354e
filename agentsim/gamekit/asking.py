"""One question to one player (`Ask`, the situation every layer game shows the core) and the
prompt codec the layer derives for every game from it (`KitCodec`).

An `Ask` holds the prompt already rendered (the rules as the system message, the player's
earlier turns when the game keeps a conversation, this turn's text), the choice it asks for,
and the plain facts the text was rendered from (the round, the player's private values, the
ask's fields), which the stand-in reads instead of the text. The store keeps it as JSON, so a
recorded call's exact messages come back from the store alone (`transcript`), whatever the
game file says today.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..codec import Codec, Parsed
from ..llm.base import Grammar, Message
from .choices import Choice, choice_from_spec


@dataclass(frozen=True, slots=True)
class Ask:
    """What one player is asked: `game` and `move` (the ask's name: "choose", "propose",
    "respond"), the round (from 1), the player's name, the choice, the rendered `system`
    text, earlier `turns` ((question, reply) pairs of a kept conversation), this turn's
    `prompt`, the `facts` it was rendered from (JSON-able), and its `step` in the round (1,
    2, ... in the order asked, asks made together sharing one; 0 where not recorded)."""

    game: str
    move: str
    round: int
    player: str
    choice: Choice
    system: str
    prompt: str
    turns: tuple[tuple[str, str], ...] = ()
    facts: tuple[tuple[str, Any], ...] = ()
    step: int = 0

    @property
    def options(self) -> tuple[str, ...]:
        """The choice set where it is small (a backend that scores options scores these)."""
        return self.choice.options

    @property
    def memory(self) -> tuple[tuple[str, Any], ...]:
        """What the choice was made from, as `Results.moves(situations=True)` shows it: the facts."""
        return self.facts

    def fact(self, key: str, default: Any = None) -> Any:
        return dict(self.facts).get(key, default)


def clause(problem: str) -> str:
    """A reader's problem as a sentence's clause: "names no number" reads "it names no number";
    "99 is not from 1 to 7" reads as it is."""
    return f"it {problem}" if problem.split(" ", 1)[0] in ("names", "has", "adds", "is") else problem


class KitCodec(Codec[Ask]):
    """The prompt codec of every layer game: messages from the rendered ask, replies read by
    the choice, a reminder naming the problem and the answer format, and a fallback drawn
    uniformly from the choice with the call's seed (recorded as a fallback)."""

    def messages(self, situation: Ask) -> tuple[Message, ...]:
        messages: list[Message] = [Message("system", situation.system)] if situation.system else []
        for question, reply in situation.turns:
            messages += [Message("user", question), Message("assistant", reply)]
        messages.append(Message("user", situation.prompt))
        return tuple(messages)

    def parse(self, text: str, situation: Ask) -> Parsed:
        action, problem = situation.choice.read(text, f"{situation.system}\n{situation.prompt}")
        return Parsed(action, problem)

    def reminder(self, situation: Ask, parsed: Parsed) -> str:
        return f"Your reply could not be used: {clause(parsed.problem or 'it is not an answer')}. {situation.choice.instruction()}"

    def fallback(self, situation: Ask, unit: float) -> str:
        import random

        choice = situation.choice
        return choice.text(choice.draw(random.Random(unit)))

    def grammar(self, situation: Ask) -> Grammar:
        return situation.choice.grammar()

    def encode(self, situation: Ask) -> str:
        return json.dumps({"g": situation.game, "m": situation.move, "r": situation.round, "p": situation.player,
                           "c": situation.choice.spec(), "s": situation.system, "q": situation.prompt,
                           "t": [list(turn) for turn in situation.turns], "f": [list(fact) for fact in situation.facts],
                           "n": situation.step},
                          separators=(",", ":"), ensure_ascii=False)

    def decode(self, context: str) -> Ask:
        data = json.loads(context)
        return Ask(data["g"], data["m"], int(data["r"]), data["p"], choice_from_spec(data["c"]), data["s"], data["q"],
                   tuple((str(question), str(reply)) for question, reply in data["t"]),
                   tuple((str(key), value) for key, value in data["f"]), int(data.get("n", 0)))
