"""What an encounter leaves behind: the records the store writes and metrics read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from . import checkpoints


@dataclass(slots=True)
class CallRecord:
    """One policy call (one attempt). `context` is the game's compact encoding of what the
    prompt was rendered from, set on the first attempt; later attempts are rebuilt from it and
    the replies before them."""

    agent: int
    attempt: int
    context: str
    reply: str
    action: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_us: int = 0
    error: str | None = None
    probabilities: Mapping[str, float] | None = None  # each option's probability, where the backend gives them
    fallback: bool = False  # the decision's last call, when no reply gave the decision (a fallback)
    sampled_locally: bool = False  # drawn from a stored choice distribution: no call was made (llm/choices.py)


@dataclass(slots=True)
class Decision:
    """An agent's answer in an encounter, with every call it took to get it."""

    action: str | None
    calls: list[CallRecord] = field(default_factory=list)
    fallback: bool = False

    @property
    def fell_back(self) -> bool:
        """The action is the game's fallback rule's, not read from any reply (an action the game
        salvaged from an unusable reply is still the model's, by the game's reading)."""
        return self.fallback and not any(call.action is not None for call in self.calls)


@dataclass(slots=True)
class Move:
    agent: int
    action: str | None
    payoff: float
    fallback: bool = False  # the action is the game's fallback, not a choice: metrics count it apart


@dataclass(slots=True)
class EncounterRecord:
    """One resolved encounter. `outcome` is the game's code (naming game: 1 success, 0 failure)."""

    t: int
    round: int
    outcome: int
    moves: list[Move]
    calls: list[CallRecord]


checkpoints.register(CallRecord, Decision, Move, EncounterRecord)
