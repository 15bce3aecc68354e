"""The prompt codec of GAMA-Bench's games: the layer's (`KitCodec`), and for a call of
GAMA-Bench-exact mode (exact.py) the runner's conversation, built from the conversation the
call records: its messages in the runner's structure, and a re-ask as the runner asks again
(the same messages; with the Gemini structure, the request once more). A call recorded by
agentsim's own mode reads as the layer's."""

from __future__ import annotations

import json

from ...codec import Parsed
from ...gamekit import Ask, KitCodec
from ...gamekit.choices import choice_from_spec
from ...llm.base import Message
from .exact import STRUCTURE, messages_of
from .exact_reading import RunnerAnswer, answer_from_spec


class GamaCodec(KitCodec):
    def messages(self, situation: Ask) -> tuple[Message, ...]:
        exact = messages_of(situation.system, situation.prompt, dict(situation.facts))
        if exact is None:
            return super().messages(situation)
        return tuple(Message("assistant" if role == "assistant" else role, text) for role, text in exact)

    def parse(self, text: str, situation: Ask) -> Parsed:
        if isinstance(situation.choice, RunnerAnswer):  # the runner reads the reply alone
            action, problem = situation.choice.read(text)
            return Parsed(action, problem)
        return super().parse(text, situation)

    def reask(self, situation: Ask, messages: tuple[Message, ...], reply: str, parsed: Parsed) -> tuple[Message, ...]:
        structure = situation.fact(STRUCTURE)
        if structure == "messages":
            return messages  # the runner sends the same messages again
        if structure == "gemini":
            return messages + (Message("user", situation.prompt),)  # the request joins the conversation again
        return super().reask(situation, messages, reply, parsed)

    def decode(self, context: str) -> Ask:
        data = json.loads(context)
        spec = data["c"]
        choice = answer_from_spec(spec) if spec.get("kind") == RunnerAnswer.kind else choice_from_spec(spec)
        return Ask(data["g"], data["m"], int(data["r"]), data["p"], choice, data["s"], data["q"],
                   tuple((str(question), str(reply)) for question, reply in data["t"]),
                   tuple((str(key), value) for key, value in data["f"]), int(data.get("n", 0)))
