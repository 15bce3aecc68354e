"""The prompt codec: everything a game family knows about talking to a language model.

A game's rules (`Scenario`) say who meets whom and what an outcome does; its codec says what a
player is asked, how its reply is read, what to re-ask with, what stands in for an unusable
answer, and how the situation is kept in the store in a few bytes (and rebuilt from them).
`policies.LLMPolicy` is handed the codec when the population is built; it never reaches
through the model for the scenario. One codec per scenario (`Scenario.codec`), generic over the
situation `S` its `start` hook shows an agent.

`Codec` is the base a family subclasses: it fills in what most games share (no salvage, no
start-up probes, rebuilding a recorded conversation from `decode`, `messages` and `reminder`);
`PromptCodec` is the protocol the core reads, for a codec written from scratch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, NamedTuple, Protocol, TypeVar

from .llm.base import Message

if TYPE_CHECKING:
    from .llm.base import Request


class Parsed(NamedTuple):
    """A reply read by the game: an action, or the problem that made it unusable."""

    action: str | None
    problem: str | None = None


class Situation(Protocol):
    """What every situation shows the core: the options a reply may name (empty: free text),
    handed to backends that constrain or score answers."""

    @property
    def options(self) -> tuple[str, ...]: ...


S = TypeVar("S", bound=Situation)
S_contra = TypeVar("S_contra", bound=Situation, contravariant=True)


class PromptCodec(Protocol[S]):
    """What `LLMPolicy`, the store's transcripts and the start-up check ask of a game's prompts."""

    def messages(self, situation: S) -> tuple[Message, ...]:
        """What the agent is asked, for the situation `Scenario.start` gave it."""

    def parse(self, text: str, situation: S) -> Parsed:
        """The action a reply answers with, or the problem that makes it unusable."""

    def reminder(self, situation: S, parsed: Parsed) -> str:
        """The user turn that re-asks after an unusable reply."""

    def reask(self, situation: S, messages: tuple[Message, ...], reply: str, parsed: Parsed) -> tuple[Message, ...]:
        """The messages that ask again after an unusable `reply` to `messages` (by default the
        reply and the `reminder`; a reference that sends the same question again says so here)."""

    def salvage(self, reply: str, situation: S) -> str | None:
        """An action read from a reply the parser refused, once re-asks are spent (None: none)."""

    def fallback(self, situation: S, unit: float) -> str | None:
        """The recorded fallback once re-asks are spent; `unit` is a uniform draw from the seed."""

    def encode(self, situation: S) -> str:
        """The situation in a few bytes for the store; `rebuild_messages` rebuilds from it."""

    def decode(self, context: str) -> S:
        """The situation `encode` gave `context` for."""

    def rebuild_messages(self, context: str, replies: tuple[str, ...] = ()) -> tuple[Message, ...]:
        """The exact messages of a recorded call, from its stored context and the replies of
        the attempts before it (a re-ask continues the conversation)."""

    def readable_probes(self, count: int, seed: int) -> list[tuple[Request, S]]:
        """Requests as the game's LLM agents send them, each with its situation, for the
        start-up check that a model's replies can be read at all (agentsim/model_fitness.py);
        empty: no check."""

    def unreadable_advice(self) -> str:
        """What to change when a model's replies cannot be read (the check's advice)."""


class Codec(Generic[S]):
    """The base of a family's codec: subclass it and write `messages`, `parse`, `reminder`,
    `fallback`, `encode` and `decode`; the rest has defaults most games keep."""

    def messages(self, situation: S) -> tuple[Message, ...]:
        raise NotImplementedError

    def parse(self, text: str, situation: S) -> Parsed:
        raise NotImplementedError

    def reminder(self, situation: S, parsed: Parsed) -> str:
        raise NotImplementedError

    def fallback(self, situation: S, unit: float) -> str | None:
        raise NotImplementedError

    def encode(self, situation: S) -> str:
        raise NotImplementedError

    def decode(self, context: str) -> S:
        """The situation `encode` gave `context` for."""
        raise NotImplementedError

    def salvage(self, reply: str, situation: S) -> str | None:
        return None

    def reask(self, situation: S, messages: tuple[Message, ...], reply: str, parsed: Parsed) -> tuple[Message, ...]:
        return messages + (Message("assistant", reply), Message("user", self.reminder(situation, parsed)))

    def rebuild_messages(self, context: str, replies: tuple[str, ...] = ()) -> tuple[Message, ...]:
        situation = self.decode(context)
        messages = self.messages(situation)
        for reply in replies:
            messages = self.reask(situation, messages, reply, self.parse(reply, situation))
        return messages

    def readable_probes(self, count: int, seed: int) -> list[tuple[Request, S]]:
        return []

    def unreadable_advice(self) -> str:
        return ""
