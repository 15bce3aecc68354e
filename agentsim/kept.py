"""A bounded memo for the hot path: what a function gives for each key, made on first use.

Prompts, replies and history blocks recur endlessly in a population (every one of them, once
a convention holds), so the engine keeps what it made of them. The bound only guards against
keys that never recur (a subclass that remembers continuous payoffs, free-text replies):
when it is reached, everything kept is forgotten at once, which costs nothing per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Kept(dict[K, V]):
    """`kept[key]` is `make(key)`, made once per key (up to `limit` keys kept)."""

    def __init__(self, make: Callable[[K], V], limit: int = 65_536) -> None:
        super().__init__()
        self.make = make
        self.limit = limit

    def __missing__(self, key: K) -> V:
        if len(self) >= self.limit:
            self.clear()
        value = self[key] = self.make(key)
        return value
