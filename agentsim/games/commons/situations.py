"""What an agent is asked in each step of a month, as plain data: the prompt is a function of
it, and the store keeps it (as compact JSON) as the call's context, so a recorded call's
exact messages are rebuilt from the store alone and a transcript can say which month and
step each call belongs to."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal

Kind = Literal["harvest", "utterance", "limit", "reflection", "importance"]
KINDS: tuple[Kind, ...] = ("harvest", "utterance", "limit", "reflection", "importance")


@dataclass(frozen=True, kw_only=True)
class CommonsSituation:
    """`kind` says which prompt; the other fields are what that prompt shows. `others` are the
    villagers present besides the agent (the rules list them); `role` is the persona's goal in
    the newcomer condition ("local" or "newcomer"); `participants` are everyone in the
    discussion; `memories` are the retrieved (date, text) pairs; `memory` and `memory_kind`
    (chat or insight) the memory an importance call rates."""

    kind: Kind
    month: int
    agent: int
    name: str = ""
    date: str = ""
    others: tuple[str, ...] = ()
    role: str = ""
    silent: bool = False  # the no-communication condition (its rules), so a context alone rebuilds
    memories: tuple[tuple[str, str], ...] = ()
    stock: int = 0
    participants: tuple[str, ...] = ()
    conversation: tuple[tuple[str, str], ...] = ()
    memory: str = ""
    memory_kind: str = ""
    options: tuple[str, ...] = ()  # free-text answers: no option list

    @property
    def greedy(self) -> bool:
        return self.role == "newcomer"

    def encode(self) -> str:
        fields = {key: value for key, value in asdict(self).items() if value not in ((), "", False, 0) or key in
                  ("kind", "month", "agent")}
        fields.pop("options", None)
        return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def decode(cls, context: str) -> CommonsSituation:
        fields = json.loads(context)
        for key in ("others", "participants", "options"):
            if key in fields:
                fields[key] = tuple(fields[key])
        for key in ("memories", "conversation"):
            if key in fields:
                fields[key] = tuple(tuple(pair) for pair in fields[key])
        return cls(**fields)
