"""The built-in stand-in backend: documented, seeded rules that answer prompts in the same text
format an LLM would, so the whole path (prompt, parsing, memory, payoffs, recording, live view)
runs on a machine with no key and no GPU.

In process, a rule is given the game's situation with the request (`Request.situation`: the
options and memory the prompt shows, nothing more); over HTTP, from the stand-in server, the
same rule reads the prompt text back into that situation. Each game contributes its rules
(its `StandInPart`, agentsim/parts.py), which the backend is handed when it is built; the first
rule that recognises a request answers it. The reply is
cut to the request's token budget with the same four-characters-per-token estimate that its
token counts use. Its dice come from the request's seed, so the same request always gets the
same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .base import Completion, Request, estimate_tokens
from .providers import STAND_IN

NAME = STAND_IN  # (its spec in the providers' table)


class StandInRule(Protocol):
    def answer(self, request: Request) -> str | None:
        """The reply to `request`, or None if this rule does not recognise the prompt."""
        ...


class StandInModel:
    """A `LanguageModel` that answers with rules, in process, without suspending."""

    name = NAME
    immediate = True

    def __init__(self, rules: Sequence[StandInRule]) -> None:
        self.rules = tuple(rules)

    async def complete(self, request: Request) -> Completion:
        return self.answer(request)

    def answer(self, request: Request) -> Completion:
        for rule in self.rules:
            text = rule.answer(request)
            if text is not None:
                break
        else:
            text = "I cannot tell what this prompt asks of me."
        text = text[: 4 * request.sampling.max_tokens]
        prompt_tokens = sum([estimate_tokens(content) for _, content in request.messages])
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=estimate_tokens(text), model=NAME)

    async def aclose(self) -> None:
        return None
